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

- **Roles:** the same post-hooks, during the forward pass, name each
  sublayer's output by the layer that made it: the first `Linear`'s is h
  (Paddle's `linear` adds the bias in the one op, so d1 never stands
  alone), `ReLU`'s is a, the second `Linear`'s is y; x's storage is x. The
  hooks hold those outputs until the record is made, so no storage is
  reused under another role. A kept tensor that no layer made stays
  unnamed, and (j) says so.
- **Backward matmuls:** not counted (None): Paddle's dygraph has no
  dispatch hook over the backward kernels, only layer hooks.

`recompute(use_reentrant=False)` installs saved-tensor hooks of its own,
and Paddle allows one pair at a time ("only one pair of hooks is allowed at
a time"): this instrument needs the reentrant default.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from ...contract import BackwardRecord, SavedTensor
from .loaded import paddle

INSTRUMENT = (
    "paddle.autograd.saved_tensors_hooks around the forward pass (storages, deduplicated); "
    "roles by sublayer forward post-hooks during the forward pass; sublayer forward "
    "post-hooks during the backward pass"
)
#: The role of each sublayer's output, by the sublayer's place in the MLP's chain.
_ROLE_BY_PLACE = {0: "h", 1: "a", 2: "y"}


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
    while `counting` is on, and otherwise name their outputs by role (`role`)."""

    def __init__(self, model: paddle.nn.Layer):
        self.counts: Counter = Counter()
        self.counting = False
        leaves = [layer for layer in model.sublayers() if not layer.sublayers()]  # Linear, ReLU
        self.places = {id(layer): place for place, layer in enumerate(leaves)}
        # The outputs themselves, held so that no storage is freed and reused meanwhile.
        self.outputs: list[tuple[paddle.Tensor, str]] = []
        self.handles = [layer.register_forward_post_hook(self._hook) for layer in leaves]

    def _hook(self, layer: paddle.nn.Layer, inputs, output) -> None:
        if self.counting:
            self.counts[type(layer).__name__] += 1
        elif isinstance(output, paddle.Tensor):
            self.outputs.append((output, _ROLE_BY_PLACE.get(self.places[id(layer)], "")))

    def role(self, ptr: int) -> str:
        """The role of the forward output whose storage is `ptr` ("" if no layer made it)."""
        return next((role for out, role in self.outputs if out.data_ptr() == ptr), "")

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def record(
    model: paddle.nn.Layer,
    run_forward: Callable[[], paddle.Tensor],
    x: paddle.Tensor,
    regions: Callable[[], int | None] = lambda: None,
) -> BackwardRecord:
    """Run `run_forward() -> output` (`model`'s forward pass) under the hooks, then
    `output.backward(ones)`.

    `x` is the leaf input (`stop_gradient=False`); `regions()`, called after
    the forward pass, counts the checkpoint regions it entered (None: not counted).
    """
    saved, calls = SavedTensors(), LayerCalls(model)
    try:
        with paddle.autograd.saved_tensors_hooks(saved.pack, saved.unpack):
            out = run_forward()
        entered = regions()
        calls.counting = True
        out.backward(paddle.ones_like(out))
    finally:
        calls.remove()
    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=classify(saved.by_storage, x, model.parameters(), calls.role),
        recomputed=dict(calls.counts),
        checkpoint_regions=entered,
        backward_matmuls=None,  # no dispatch hook over Paddle's backward kernels
    )


def classify(
    by_storage: Mapping[int, paddle.Tensor],
    x: paddle.Tensor,
    parameters: Iterable[paddle.Tensor],
    role: Callable[[int], str] = lambda ptr: "",
) -> tuple[SavedTensor, ...]:
    """Saved tensors, one per storage: x's is the input (role x), a parameter's a parameter,
    anything else an activation, whose role is `role(ptr)` ("" where no layer made it)."""
    input_ptr = x.data_ptr()
    names = {p.data_ptr(): p.name for p in parameters}
    saved = []
    for ptr, tensor in by_storage.items():
        shape, dtype = tuple(tensor.shape), str(tensor.dtype).removeprefix("paddle.")
        if ptr == input_ptr:
            saved.append(SavedTensor(shape, dtype, "input", f"x ({tensor.name})", "x"))
        elif ptr in names:
            saved.append(SavedTensor(shape, dtype, "parameter", f"parameter {names[ptr]}"))
        else:
            named = role(ptr)
            note = f"{named + ': ' if named else ''}tensor {tensor.name}"
            saved.append(SavedTensor(shape, dtype, "activation", note, named))
    return tuple(saved)
