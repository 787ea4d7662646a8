"""The instrument of the stacks that hook saved tensors and leaf modules (Paddle, MindSpore in
PyNative mode), read off a port's own call (its `vjp`, or its `nn_checkpoint_forward` and a
backward pass), never off a model of the base's: `observe` (`ObservedCall`, `Engine`,
`watching`, `classify_by_values`); and the benches' pieces, `SavedTensors` and `classify`.
Imports numpy and the standard library only: a stack passes its framework's pieces (its
`saved_tensors_hooks`, its backward engine's entry points, its module class, its tensor type,
how a tensor is described).

- **Phases:** the call is in its backward pass while one of the engine's entry points runs
  (`watching` wraps them for the call's length), in its forward pass otherwise.
- **Saved:** `ObservedCall.pack`, installed by the framework's `saved_tensors_hooks(pack,
  unpack)` around the whole call, notes every tensor autograd keeps in the forward phase,
  once per storage (`data_ptr()`). `classify_by_values` makes them records, by values since
  no model object is known: a tensor no leaf module made whose values are x's is the input,
  one whose values are a parameter's a parameter, anything else an activation.
- **Recomputed:** every leaf module (the module class's `__call__`, watched for the call's
  length) that runs in the backward phase, counted by class.
- **Roles:** the same watch, in the forward phase, names each leaf's output by the place the
  leaf first ran in (`ROLE_BY_PLACE`: h, a, y). It holds those outputs until the record is
  made, so that no storage is reused under another role. A kept tensor that no leaf made
  stays unnamed.
- **Backward matmuls:** not counted (None): these stacks watch modules, not backward kernels.

`SavedTensors` and `classify` are the benches' (a stack of the benches' own model: x's
storage is the input, a parameter's a parameter, anything else an activation).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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

    **Arguments:** `tensor_type`, the framework's tensor class (an output of another type is
    not named). The phase is the engine's (`Engine`, marked by `watching`). Nothing here knows
    the port's model: leaves are placed in the order they first ran.
    """

    def __init__(self, tensor_type: type):
        self.engine, self.tensor_type = Engine(), tensor_type
        self.saved: dict[int, Any] = {}  # storage -> the tensor kept (held: no reuse)
        self.counts: Counter = Counter()
        self.places: dict[int, int] = {}  # id(leaf) -> its place in the chain
        # Leaves and outputs held until the record is made, so no id or storage is reused.
        self.held: list[Any] = []
        self.outputs: list[tuple[Any, str]] = []

    def pack(self, tensor: Any) -> Any:
        # A tensor packed in the backward phase is a recompute's own, freed before it ends.
        if not self.engine.running():
            self.saved.setdefault(tensor.data_ptr(), tensor)
        return tensor

    @staticmethod
    def unpack(tensor: Any) -> Any:
        return tensor

    def leaf_ran(self, leaf: Any, output: Any) -> None:
        """Note one call of a leaf module that returned `output`."""
        if self.engine.running():
            self.counts[type(leaf).__name__] += 1
        elif isinstance(output, self.tensor_type):
            place = self.places.setdefault(id(leaf), len(self.places))
            self.held.append(leaf)
            self.outputs.append((output, ROLE_BY_PLACE.get(place, "")))

    def made(self, ptr: int) -> bool:
        """Whether a leaf module made the storage `ptr` in the forward phase."""
        return any(out.data_ptr() == ptr for out, _ in self.outputs)

    def role(self, ptr: int) -> str:
        """The role of the forward output whose storage is `ptr` ("" if no leaf made it)."""
        return next((role for out, role in self.outputs if out.data_ptr() == ptr), "")


class Engine:
    """How deep a call is in its framework's backward engine (0: in its forward phase)."""

    def __init__(self):
        self.depth = 0

    def running(self) -> bool:
        return self.depth > 0

    def marked(self, run: Callable) -> Callable:
        """`run` (an engine entry point), marking the backward phase while it runs."""

        def run_marked(*args: Any, **kwargs: Any) -> Any:
            self.depth += 1
            try:
                return run(*args, **kwargs)
            finally:
                self.depth -= 1

        return run_marked


@contextlib.contextmanager
def watching(
    watch: ObservedCall,
    entries: Sequence[tuple[Any, str]],
    module_class: type,
    is_leaf_module: Callable[[Any], bool],
) -> Iterator[None]:
    """For the call's length: each `(owner, name)` of `entries` (the framework's backward
    engine entry points, looked up on their owner at each call) marks the backward phase, and
    every call of a leaf module (`module_class.__call__`, `is_leaf_module(module)`) is noted.
    Everything is put back whatever happens."""
    # An entry point found on the owner's class is put back by deleting the owner's own.
    originals = [
        (owner, name, getattr(owner, name), name in vars(owner)) for owner, name in entries
    ]
    module_call = module_class.__call__

    def call_noted(module: Any, *inputs: Any, **kwargs: Any) -> Any:
        output = module_call(module, *inputs, **kwargs)
        if is_leaf_module(module):
            watch.leaf_ran(module, output)
        return output

    try:
        for owner, name, entry, _ in originals:
            setattr(owner, name, watch.engine.marked(entry))
        module_class.__call__ = call_noted
        yield
    finally:
        module_class.__call__ = module_call
        for owner, name, entry, own in originals:
            if own:
                setattr(owner, name, entry)
            else:
                delattr(owner, name)


def classify_by_values(
    watch: ObservedCall,
    x: Any,
    parameters: Sequence[Any],
    *,
    to_numpy: Callable[[Any], Any],
    is_leaf: Callable[[Any], bool],
    made_by: Callable[[Any], str],
    describe: Describe,
) -> tuple[SavedTensor, ...]:
    """The tensors `watch` saw kept, with no model object to compare with: a leaf (made by no
    leaf module of the call, nor, where `is_leaf` can tell, by a differentiable op) whose
    values are x's is the input, one whose values are a parameter's (`parameters`, numpy
    arrays, or their transpose) a parameter; anything else an activation (computed in the call,
    or kept under a name the call hid), named by its role and `made_by(tensor)`."""
    x = np.asarray(x, np.float32)
    known = [np.asarray(p, np.float32) for p in parameters]
    records = []
    for ptr, tensor in watch.saved.items():
        shape = tuple(tensor.shape)
        dtype, input_note, activation_note = describe(tensor)
        leaf = not watch.made(ptr) and is_leaf(tensor)
        values = np.asarray(to_numpy(tensor)) if leaf else None
        if values is not None and _same(values, x):
            records.append(SavedTensor(shape, dtype, "input", input_note, "x"))
        elif values is not None and any(_same(values, p) or _same(values, p.T) for p in known):
            records.append(SavedTensor(shape, dtype, "parameter", "a parameter (its values)"))
        else:
            named = watch.role(ptr)
            note = f"{named + ': ' if named else ''}output of {made_by(tensor)}, {activation_note}"
            records.append(SavedTensor(shape, dtype, "activation", note, named))
    return tuple(records)


def _same(values: Any, expected: Any) -> bool:
    return values.shape == expected.shape and bool(np.array_equal(values, expected))


def observe(
    call: Callable[[], Any],
    x: Any,
    parameters: Callable[[], Iterable[Any]],
    *,
    tensor_type: type,
    saved_tensors_hooks: Callable[[Callable, Callable], AbstractContextManager],
    entries: Sequence[tuple[Any, str]],
    module_class: type,
    is_leaf_module: Callable[[Any], bool],
    to_numpy: Callable[[Any], Any],
    is_leaf: Callable[[Any], bool],
    made_by: Callable[[Any], str],
    describe: Describe,
    instrument: str,
) -> BackwardRecord:
    """The instrument on `call()`, a forward and a backward pass of a port's own code, under
    `saved_tensors_hooks` and `watching` (its other arguments: the framework's pieces, as
    `watching` and `classify_by_values` take them); `x` is the values of the call's input (a
    numpy array), `parameters()`, called after the call, the parameters' values."""
    watch = ObservedCall(tensor_type)
    hooks = saved_tensors_hooks(watch.pack, watch.unpack)
    with hooks, watching(watch, entries, module_class, is_leaf_module):
        call()
    saved = classify_by_values(
        watch,
        x,
        list(parameters()),
        to_numpy=to_numpy,
        is_leaf=is_leaf,
        made_by=made_by,
        describe=describe,
    )
    return BackwardRecord(
        instrument=instrument,
        saved=saved,
        recomputed=dict(watch.counts),
        checkpoint_regions=None,
        backward_matmuls=None,  # no hook over the backward kernels
    )
