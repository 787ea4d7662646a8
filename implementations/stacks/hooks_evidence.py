"""The instrument of the stacks that hook saved tensors and leaf modules (Paddle, MindSpore in
PyNative mode): `SavedTensors`, `LeafCalls`, `classify`, `record`, and, for the evidence read
off a port's own call (one path: no model of the base's), `ObservedCall` and
`classify_by_values`. Imports numpy and the standard library only: a stack passes its
framework's pieces (its `saved_tensors_hooks`, how a leaf takes a forward hook, its tensor
type, how a tensor is described).

- **Saved:** `SavedTensors.pack`, installed by the framework's `saved_tensors_hooks(pack,
  unpack)` around the forward pass, notes every tensor autograd keeps, once per storage
  (`data_ptr()`). `classify` makes them records: x's storage is the input (role x), a
  parameter's a parameter, anything else an activation.
- **Recomputed:** `LeafCalls`, a forward hook on each leaf module of the model, counts by
  class the leaves that run during the backward pass.
- **Roles:** the same hooks, during the forward pass, name each leaf's output by the leaf's
  place in the MLP's chain (`ROLE_BY_PLACE`: h, a, y). They hold those outputs until the
  record is made, so that no storage is reused under another role. A kept tensor that no
  leaf made stays unnamed.
- **Backward matmuls:** not counted (None): these stacks hook modules, not backward kernels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from ..contract import BackwardRecord, SavedTensor

#: The role of each leaf's output, by the leaf's place in the MLP's chain.
ROLE_BY_PLACE = {0: "h", 1: "a", 2: "y"}

#: `describe(tensor) -> (dtype, note of x, note of an activation)`: the framework's words.
Describe = Callable[[Any], tuple[str, str, str]]


class SavedTensors:
    """Pack hook: notes every saved tensor, once per storage (`data_ptr`)."""

    def __init__(self):
        self.by_storage: dict[int, Any] = {}

    def pack(self, tensor: Any) -> Any:
        self.by_storage.setdefault(tensor.data_ptr(), tensor)
        return tensor

    @staticmethod
    def unpack(tensor: Any) -> Any:
        return tensor


class LeafCalls:
    """Forward hooks on a model's leaf modules that count their calls by class while
    `counting` is on, and otherwise name their outputs by role (`role`).

    **Arguments:**

    - `leaves`: the leaf modules, in the MLP's order (`ROLE_BY_PLACE`).
    - `register(leaf, hook)`: installs `hook(leaf, inputs, output)` as the leaf's forward
      hook and returns a handle with `remove()`.
    - `tensor_type`: the framework's tensor class (an output of another type is not named).
    """

    def __init__(
        self, leaves: Sequence[Any], register: Callable[[Any, Callable], Any], tensor_type: type
    ):
        self.counts: Counter = Counter()
        self.counting = False
        self.tensor_type = tensor_type
        self.places = {id(leaf): place for place, leaf in enumerate(leaves)}
        # The outputs themselves, held so that no storage is freed and reused meanwhile.
        self.outputs: list[tuple[Any, str]] = []
        self.handles = [register(leaf, self._hook) for leaf in leaves]

    def _hook(self, leaf: Any, inputs: Any, output: Any) -> None:
        if self.counting:
            self.counts[type(leaf).__name__] += 1
        elif isinstance(output, self.tensor_type):
            self.outputs.append((output, ROLE_BY_PLACE.get(self.places[id(leaf)], "")))

    def role(self, ptr: int) -> str:
        """The role of the forward output whose storage is `ptr` ("" if no leaf made it)."""
        return next((role for out, role in self.outputs if out.data_ptr() == ptr), "")

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def record(
    calls: LeafCalls,
    saved_tensors_hooks: Callable[[Callable, Callable], AbstractContextManager],
    forward: Callable[[], Callable[[], Any]],
    *,
    x: Any,
    parameters: Callable[[], Iterable[Any]],
    describe: Describe,
    instrument: str,
    regions: Callable[[], int | None] = lambda: None,
) -> BackwardRecord:
    """Run `forward() -> backward` under `saved_tensors_hooks`, then `backward()` with `calls`
    counting; the hooks come off (`calls.remove()`) whatever happens.

    `forward` runs the model's forward pass and returns the call that runs its backward
    pass; `x` is the input, `parameters()` (called once both passes ran) the model's
    parameters; `regions()`, called after the forward pass, counts the checkpoint regions it
    entered (None: not counted); `instrument` is the record's description of all this.
    """
    saved = SavedTensors()
    try:
        with saved_tensors_hooks(saved.pack, saved.unpack):
            backward = forward()
        entered = regions()
        calls.counting = True
        backward()
    finally:
        calls.remove()
    return BackwardRecord(
        instrument=instrument,
        saved=classify(saved.by_storage, x, parameters(), calls.role, describe=describe),
        recomputed=dict(calls.counts),
        checkpoint_regions=entered,
        backward_matmuls=None,  # no hook over the backward kernels
    )


def classify(
    by_storage: Mapping[int, Any],
    x: Any,
    parameters: Iterable[Any],
    role: Callable[[int], str] = lambda ptr: "",
    *,
    describe: Describe,
) -> tuple[SavedTensor, ...]:
    """Saved tensors, one per storage: x's is the input (role x), a parameter's a parameter,
    anything else an activation, whose role is `role(ptr)` ("" where no leaf made it).

    `describe(tensor)` gives its dtype's name and the notes of x and of an activation.
    """
    input_ptr = x.data_ptr()
    names = {p.data_ptr(): p.name for p in parameters}
    saved = []
    for ptr, tensor in by_storage.items():
        shape = tuple(tensor.shape)
        dtype, input_note, activation_note = describe(tensor)
        if ptr == input_ptr:
            saved.append(SavedTensor(shape, dtype, "input", input_note, "x"))
        elif ptr in names:
            saved.append(SavedTensor(shape, dtype, "parameter", f"parameter {names[ptr]}"))
        else:
            named = role(ptr)
            note = f"{named + ': ' if named else ''}{activation_note}"
            saved.append(SavedTensor(shape, dtype, "activation", note, named))
    return tuple(saved)


# -- one path: the instrument on the port's own call --------------------------------------


class ObservedCall:
    """What one call of a port's own code did, as an eager stack's hooks see it: the tensors
    autograd kept in its forward phase (`pack`, once per storage) and the leaf modules it ran
    (`leaf_ran`: outputs named by role in the forward phase, counted by class in the backward).

    **Arguments:** `in_backward()`, whether the framework is running a backward pass now;
    `tensor_type`, the framework's tensor class (an output of another type is not named).
    Nothing here knows the port's model: leaves are placed in the order they first ran.
    """

    def __init__(self, in_backward: Callable[[], bool], tensor_type: type):
        self.in_backward, self.tensor_type = in_backward, tensor_type
        self.saved: dict[int, Any] = {}  # storage -> the tensor kept (held: no reuse)
        self.counts: Counter = Counter()
        self.places: dict[int, int] = {}  # id(leaf) -> its place in the chain
        # Leaves and outputs held until the record is made, so no id or storage is reused.
        self.held: list[Any] = []
        self.outputs: list[tuple[Any, str]] = []

    def pack(self, tensor: Any) -> Any:
        # A tensor packed in the backward phase is a recompute's own, freed before it ends.
        if not self.in_backward():
            self.saved.setdefault(tensor.data_ptr(), tensor)
        return tensor

    @staticmethod
    def unpack(tensor: Any) -> Any:
        return tensor

    def leaf_ran(self, leaf: Any, output: Any) -> None:
        """Note one call of a leaf module that returned `output`."""
        if self.in_backward():
            self.counts[type(leaf).__name__] += 1
        elif isinstance(output, self.tensor_type):
            place = self.places.setdefault(id(leaf), len(self.places))
            self.held.append(leaf)
            self.outputs.append((output, ROLE_BY_PLACE.get(place, "")))

    def role(self, ptr: int) -> str:
        """The role of the forward output whose storage is `ptr` ("" if no leaf made it)."""
        return next((role for out, role in self.outputs if out.data_ptr() == ptr), "")


def classify_by_values(
    saved: Mapping[int, Any],
    x: Any,
    parameters: Sequence[Any],
    role: Callable[[int], str],
    *,
    to_numpy: Callable[[Any], Any],
    is_leaf: Callable[[Any], bool],
    made_by: Callable[[Any], str],
    describe: Describe,
) -> tuple[SavedTensor, ...]:
    """Saved tensors of a port's own call, with no model object to compare with: a leaf (made
    by no differentiable op of the call) whose values are x's is the input, one whose values
    are a parameter's (`parameters`, numpy arrays, or their transpose) a parameter; anything
    else an activation (computed in the call, or kept under a name the call hid), named by
    `role(ptr)` and `made_by(tensor)` (the op that made it)."""
    x = np.asarray(x, np.float32)
    known = [np.asarray(p, np.float32) for p in parameters]
    records = []
    for ptr, tensor in saved.items():
        shape = tuple(tensor.shape)
        dtype, input_note, activation_note = describe(tensor)
        values = np.asarray(to_numpy(tensor)) if is_leaf(tensor) else None
        if values is not None and _same(values, x):
            records.append(SavedTensor(shape, dtype, "input", input_note, "x"))
        elif values is not None and any(_same(values, p) or _same(values, p.T) for p in known):
            records.append(SavedTensor(shape, dtype, "parameter", f"parameter, {activation_note}"))
        else:
            named = role(ptr)
            note = f"{named + ': ' if named else ''}output of {made_by(tensor)}, {activation_note}"
            records.append(SavedTensor(shape, dtype, "activation", note, named))
    return tuple(records)


def _same(values: Any, expected: Any) -> bool:
    return values.shape == expected.shape and bool(np.array_equal(values, expected))
