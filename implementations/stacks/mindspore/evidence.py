"""MindSpore's instrument (PyNative mode) for what a backward pass saves and recomputes: the
shared hook instrument (`implementations.stacks.hooks_evidence`) with MindSpore's pieces.

Imports mindspore only.

- **Saved:** `mindspore.saved_tensors_hooks(pack, unpack)` around the forward
  half of `mindspore.vjp` (the call that returns the output and `vjp_fn`):
  what autograd keeps, deduplicated by `data_ptr()`. x's storage is the
  input, a parameter's a parameter, anything else an activation. With
  `Cell.recompute()` the forward keeps x alone; without, x, both kernels and
  the hidden layer.
- **Recomputed:** a forward hook on each leaf cell (`Affine`, `ReLU`) counts,
  by cell class, the cells that run during `vjp_fn(cotangent)`: none
  without recompute; with it, the whole block again.
- **Roles:** the same hooks, during the forward half, name each leaf
  cell's output by the cell that made it: the first `Affine`'s is h (it
  adds the bias inside the cell, so d1 is never seen alone), `ReLU`'s is
  a, the second `Affine`'s is y; x's storage is x. The hooks hold those
  outputs until the record is made, so no storage is reused under another
  role. A kept tensor that no cell made stays unnamed, and (j) says so.
- **Backward matmuls:** not counted (None): PyNative offers hooks on
  cells, none over the backward kernels.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ...contract import BackwardRecord
from .. import hooks_evidence
from ..hooks_evidence import SavedTensors
from .loaded import ms

INSTRUMENT = (
    "mindspore.saved_tensors_hooks around the forward of mindspore.vjp (storages, "
    "deduplicated); roles by leaf-cell forward hooks during that forward; leaf-cell forward "
    "hooks during vjp_fn"
)


def describe(tensor: ms.Tensor) -> tuple[str, str, str]:
    """Its dtype in lower case (`float32`); x is x, an activation computed from x."""
    return str(tensor.dtype).lower(), "x", "computed from x"


#: `classify(by_storage, x, parameters, role)`: the saved tensors as records, in MindSpore's words.
classify = functools.partial(hooks_evidence.classify, describe=describe)


class CellCalls(hooks_evidence.LeafCalls):
    """`LeafCalls` on a model's leaf cells: forward hooks that count their calls by class
    while `counting`, and otherwise name their outputs by role (`role`)."""

    def __init__(self, model: ms.nn.Cell):
        # Leaf cells of the model itself; MindSpore's own wrappers (`_WrapCell`) left out.
        leaves = [
            cell
            for _, cell in model.cells_and_names()
            if not list(cell.cells()) and not type(cell).__name__.startswith("_")
        ]
        super().__init__(leaves, _forward_hook, ms.Tensor)


def _forward_hook(cell: ms.nn.Cell, hook: Callable):
    return cell.register_forward_hook(hook)


def record(model: ms.nn.Cell, x: ms.Tensor, weights: list) -> BackwardRecord:
    """`mindspore.vjp(model, x, weights=...)` under the hooks, then `vjp_fn(ones)`.

    `weights`: the parameters to differentiate (none for a frozen model).
    """

    def forward() -> Callable[[], object]:
        out, vjp_fn = ms.vjp(model, x, weights=weights or None)
        return lambda: vjp_fn(ms.ops.ones_like(out))

    return hooks_evidence.record(
        CellCalls(model),
        ms.saved_tensors_hooks,
        forward,
        x=x,
        parameters=model.get_parameters,
        describe=describe,
        instrument=INSTRUMENT,
    )


def run_first_call() -> str | None:
    """The first PyNative `value_and_grad` of a function that closes over a Tensor, once.

    MindSpore 2.10.0 under numpy 2 fails it once with `SystemError`
    ("py_parse.cc:132 Numpy init failed"), and every later call works.
    Returns the error's text when it failed, None when it ran.
    """
    weight = ms.Tensor([2.0], ms.float32)
    try:
        ms.value_and_grad(lambda v: (v * weight).sum())(ms.Tensor([1.0], ms.float32))
    except SystemError as error:
        return f"{type(error).__name__}: {error}"
    return None


__all__ = [
    "INSTRUMENT",
    "CellCalls",
    "SavedTensors",
    "classify",
    "describe",
    "record",
    "run_first_call",
]
