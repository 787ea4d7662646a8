"""MindSpore's instrument (PyNative mode) for what a backward pass saves and recomputes.

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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import mindspore as ms

from ...contract import BackwardRecord, SavedTensor

INSTRUMENT = (
    "mindspore.saved_tensors_hooks around the forward of mindspore.vjp (storages, "
    "deduplicated); leaf-cell forward hooks during vjp_fn"
)


class SavedTensors:
    """Pack hook: notes every saved tensor, once per storage (`data_ptr`)."""

    def __init__(self):
        self.by_storage: dict[int, ms.Tensor] = {}

    def pack(self, tensor: ms.Tensor) -> ms.Tensor:
        self.by_storage.setdefault(tensor.data_ptr(), tensor)
        return tensor

    @staticmethod
    def unpack(tensor: ms.Tensor) -> ms.Tensor:
        return tensor


class CellCalls:
    """Forward hooks on a model's leaf cells that count their calls by class while `counting`."""

    def __init__(self, model: ms.nn.Cell):
        self.counts: Counter = Counter()
        self.counting = False
        # Leaf cells of the model itself; MindSpore's own wrappers (`_WrapCell`) left out.
        leaves = [
            cell
            for _, cell in model.cells_and_names()
            if not list(cell.cells()) and not type(cell).__name__.startswith("_")
        ]
        self.handles = [cell.register_forward_hook(self._hook) for cell in leaves]

    def _hook(self, cell: ms.nn.Cell, inputs, output) -> None:
        if self.counting:
            self.counts[type(cell).__name__] += 1

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def record(model: ms.nn.Cell, x: ms.Tensor, weights: list) -> BackwardRecord:
    """`mindspore.vjp(model, x, weights=...)` under the hooks, then `vjp_fn(ones)`.

    `weights`: the parameters to differentiate (none for a frozen model).
    """
    saved, calls = SavedTensors(), CellCalls(model)
    try:
        with ms.saved_tensors_hooks(saved.pack, saved.unpack):
            out, vjp_fn = ms.vjp(model, x, weights=weights or None)
        calls.counting = True
        vjp_fn(ms.ops.ones_like(out))
    finally:
        calls.remove()
    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=classify(saved.by_storage, x, model.get_parameters()),
        recomputed=dict(calls.counts),
    )


def classify(
    by_storage: Mapping[int, ms.Tensor], x: ms.Tensor, parameters: Iterable[ms.Parameter]
) -> tuple[SavedTensor, ...]:
    """Saved tensors, one per storage: x's is the input, a parameter's a parameter, anything
    else an activation."""
    input_ptr = x.data_ptr()
    names = {p.data_ptr(): p.name for p in parameters}
    saved = []
    for ptr, tensor in by_storage.items():
        shape, dtype = tuple(tensor.shape), str(tensor.dtype).lower()
        if ptr == input_ptr:
            saved.append(SavedTensor(shape, dtype, "input", "x"))
        elif ptr in names:
            saved.append(SavedTensor(shape, dtype, "parameter", f"parameter {names[ptr]}"))
        else:
            saved.append(SavedTensor(shape, dtype, "activation", "computed from x"))
    return tuple(saved)


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
