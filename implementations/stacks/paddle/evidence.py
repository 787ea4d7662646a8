"""Paddle's instrument for what a backward pass saves and recomputes. Imports paddle only.

- **Saved:** `paddle.autograd.saved_tensors_hooks(pack, unpack)` around the
  forward pass: every tensor autograd keeps for backward, deduplicated by
  `data_ptr()`. x's storage is the input, a parameter's a parameter,
  anything else an activation (a copy of x that shares no storage with it is
  one too: the instrument cannot tell it from one computed from x, so the
  reentrant recompute's copy of x is reported as what it is, a tensor kept).
  With `recompute` (`use_reentrant=True`, the default) the forward keeps
  only that copy of x; without, x, both kernels, and the hidden layer before
  and after the relu.
- **Recomputed:** a forward post-hook on each sublayer (`Linear`, `ReLU`)
  counts, by layer class, the layers that run during the backward pass:
  none without a checkpoint; with `recompute`, the whole block again.

`recompute(use_reentrant=False)` installs saved-tensor hooks of its own,
and Paddle allows one pair at a time ("only one pair of hooks is allowed at
a time"): this instrument needs the reentrant default.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

import paddle

from ...contract import BackwardRecord, SavedTensor

INSTRUMENT = (
    "paddle.autograd.saved_tensors_hooks around the forward pass (storages, deduplicated); "
    "sublayer forward post-hooks during the backward pass"
)


class SavedTensors:
    """Pack hook: notes every saved tensor, once per storage (`data_ptr`)."""

    def __init__(self):
        self.by_storage: dict[int, paddle.Tensor] = {}

    def pack(self, tensor: paddle.Tensor) -> paddle.Tensor:
        self.by_storage.setdefault(tensor.data_ptr(), tensor)
        return tensor

    @staticmethod
    def unpack(tensor: paddle.Tensor) -> paddle.Tensor:
        return tensor


class LayerCalls:
    """Forward post-hooks on a model's sublayers that count their calls by layer class,
    while `counting` is on."""

    def __init__(self, model: paddle.nn.Layer):
        self.counts: Counter = Counter()
        self.counting = False
        self.handles = [
            layer.register_forward_post_hook(self._hook)
            for layer in model.sublayers()
            if not layer.sublayers()  # leaves: Linear, ReLU
        ]

    def _hook(self, layer: paddle.nn.Layer, inputs, output) -> None:
        if self.counting:
            self.counts[type(layer).__name__] += 1

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def record(
    run_forward: Callable[[], tuple[paddle.Tensor, paddle.nn.Layer]],
    x: paddle.Tensor,
    regions: Callable[[], int | None] = lambda: None,
) -> BackwardRecord:
    """Run `run_forward() -> (output, model)` under the hooks, then `output.backward(ones)`.

    `x` is the leaf input (`stop_gradient=False`); `regions()`, called after
    the forward pass, counts the checkpoint regions it entered (None: not counted).
    """
    saved = SavedTensors()
    with paddle.autograd.saved_tensors_hooks(saved.pack, saved.unpack):
        out, model = run_forward()
    entered = regions()
    calls = LayerCalls(model)
    try:
        calls.counting = True
        out.backward(paddle.ones_like(out))
    finally:
        calls.remove()
    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=classify(saved.by_storage, x, model.parameters()),
        recomputed=dict(calls.counts),
        checkpoint_regions=entered,
    )


def classify(
    by_storage: Mapping[int, paddle.Tensor], x: paddle.Tensor, parameters: Iterable[paddle.Tensor]
) -> tuple[SavedTensor, ...]:
    """Saved tensors, one per storage: x's is the input, a parameter's a parameter, anything
    else an activation."""
    input_ptr = x.data_ptr()
    names = {p.data_ptr(): p.name for p in parameters}
    saved = []
    for ptr, tensor in by_storage.items():
        shape, dtype = tuple(tensor.shape), str(tensor.dtype).removeprefix("paddle.")
        if ptr == input_ptr:
            saved.append(SavedTensor(shape, dtype, "input", f"x ({tensor.name})"))
        elif ptr in names:
            saved.append(SavedTensor(shape, dtype, "parameter", f"parameter {names[ptr]}"))
        else:
            saved.append(SavedTensor(shape, dtype, "activation", f"tensor {tensor.name}"))
    return tuple(saved)
