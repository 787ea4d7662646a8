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

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from ...contract import BackwardRecord, SavedTensor
from .loaded import ms

INSTRUMENT = (
    "mindspore.saved_tensors_hooks around the forward of mindspore.vjp (storages, "
    "deduplicated); roles by leaf-cell forward hooks during that forward; leaf-cell forward "
    "hooks during vjp_fn"
)
#: The role of each leaf cell's output, by the cell's place in the MLP's chain.
_ROLE_BY_PLACE = {0: "h", 1: "a", 2: "y"}


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
    """Forward hooks on a model's leaf cells that count their calls by class while `counting`,
    and otherwise name their outputs by role (`role`)."""

    def __init__(self, model: ms.nn.Cell):
        self.counts: Counter = Counter()
        self.counting = False
        # Leaf cells of the model itself; MindSpore's own wrappers (`_WrapCell`) left out.
        leaves = [
            cell
            for _, cell in model.cells_and_names()
            if not list(cell.cells()) and not type(cell).__name__.startswith("_")
        ]
        self.places = {id(cell): place for place, cell in enumerate(leaves)}
        # The outputs themselves, held so that no storage is freed and reused meanwhile.
        self.outputs: list[tuple[ms.Tensor, str]] = []
        self.handles = [cell.register_forward_hook(self._hook) for cell in leaves]

    def _hook(self, cell: ms.nn.Cell, inputs, output) -> None:
        if self.counting:
            self.counts[type(cell).__name__] += 1
        elif isinstance(output, ms.Tensor):
            self.outputs.append((output, _ROLE_BY_PLACE.get(self.places[id(cell)], "")))

    def role(self, ptr: int) -> str:
        """The role of the forward output whose storage is `ptr` ("" if no cell made it)."""
        return next((role for out, role in self.outputs if out.data_ptr() == ptr), "")

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
        saved=classify(saved.by_storage, x, model.get_parameters(), calls.role),
        recomputed=dict(calls.counts),
        backward_matmuls=None,  # no hook over MindSpore's backward kernels in PyNative
    )


def classify(
    by_storage: Mapping[int, ms.Tensor],
    x: ms.Tensor,
    parameters: Iterable[ms.Parameter],
    role: Callable[[int], str] = lambda ptr: "",
) -> tuple[SavedTensor, ...]:
    """Saved tensors, one per storage: x's is the input (role x), a parameter's a parameter,
    anything else an activation, whose role is `role(ptr)` ("" where no cell made it)."""
    input_ptr = x.data_ptr()
    names = {p.data_ptr(): p.name for p in parameters}
    saved = []
    for ptr, tensor in by_storage.items():
        shape, dtype = tuple(tensor.shape), str(tensor.dtype).lower()
        if ptr == input_ptr:
            saved.append(SavedTensor(shape, dtype, "input", "x", "x"))
        elif ptr in names:
            saved.append(SavedTensor(shape, dtype, "parameter", f"parameter {names[ptr]}"))
        else:
            named = role(ptr)
            note = f"{named + ': ' if named else ''}computed from x"
            saved.append(SavedTensor(shape, dtype, "activation", note, named))
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
