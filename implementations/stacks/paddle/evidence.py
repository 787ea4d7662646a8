"""Paddle's instrument for what a backward pass saves and recomputes: the shared hook
instrument (`implementations.stacks.hooks_evidence`) with Paddle's pieces. Imports paddle only.

- **Saved:** `paddle.autograd.saved_tensors_hooks(pack, unpack)` around the
  forward pass: every tensor autograd keeps, deduplicated by
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

import functools
from collections.abc import Callable

from ...contract import BackwardRecord
from .. import hooks_evidence
from ..hooks_evidence import SavedTensors
from .loaded import paddle

INSTRUMENT = (
    "paddle.autograd.saved_tensors_hooks around the forward pass (storages, deduplicated); "
    "roles by sublayer forward post-hooks during the forward pass; sublayer forward "
    "post-hooks during the backward pass"
)


def describe(tensor: paddle.Tensor) -> tuple[str, str, str]:
    """Its dtype without the `paddle.` prefix; x and an activation noted by the tensor's name."""
    return str(tensor.dtype).removeprefix("paddle."), f"x ({tensor.name})", f"tensor {tensor.name}"


#: `classify(by_storage, x, parameters, role)`: the saved tensors as records, in Paddle's words.
classify = functools.partial(hooks_evidence.classify, describe=describe)


class LayerCalls(hooks_evidence.LeafCalls):
    """`LeafCalls` on a model's sublayers that hold none (`Linear`, `ReLU`): forward
    post-hooks that count their calls by layer class while `counting`, and otherwise name
    their outputs by role (`role`)."""

    def __init__(self, model: paddle.nn.Layer):
        leaves = [layer for layer in model.sublayers() if not layer.sublayers()]
        super().__init__(leaves, _post_hook, paddle.Tensor)


def _post_hook(layer: paddle.nn.Layer, hook: Callable):
    return layer.register_forward_post_hook(hook)


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

    def forward() -> Callable[[], None]:
        out = run_forward()
        return lambda: out.backward(paddle.ones_like(out))

    return hooks_evidence.record(
        LayerCalls(model),
        paddle.autograd.saved_tensors_hooks,
        forward,
        x=x,
        parameters=model.parameters,
        describe=describe,
        instrument=INSTRUMENT,
        regions=regions,
    )


__all__ = ["INSTRUMENT", "LayerCalls", "SavedTensors", "classify", "describe", "record"]
