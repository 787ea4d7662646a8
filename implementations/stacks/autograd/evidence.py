"""autograd's instrument: what `make_vjp` keeps for the backward pass, and what that pass runs.

autograd builds the backward graph while the forward pass runs. Each primitive
applied to a traced value becomes a `VJPNode` holding its `parents` and its
`vjp`, a closure that the primitive's VJP maker returned there and then, over
the values that VJP will read. `make_vjp` hands back a closure over the last
node. So:

- **Saved**: every numpy array reachable from that closure through the graph
  (nodes' `parents` and `vjp`), closures (their cells and defaults), tuples,
  lists, dicts and boxes: what the graph holds alive until the backward pass.
  A view counts as the array that owns its data. Arrays that a `Tap` named get
  their role and origin (the arguments' origins as the caller says; `w1`..`b2`
  parameters; the rest activations); an array nothing named is reported as an
  activation with no role (unknown is never taken for harmless).
- **The backward pass** (`vjp(cotangent)`) runs under a profiler
  (`sys.setprofile`) that sees every Python call, and so every primitive call
  (autograd's `f_wrapped`, whose free variable `f_raw` is the numpy function it
  wraps), every node built (`VJPNode.__init__`) and every trace started
  (`tracer.trace`):
  - **recomputed**: the primitives traced during the backward pass, by name (the
    nodes it builds): forward work redone so that it can be differentiated, which
    is what a checkpoint does. Without one the backward pass runs every VJP on
    plain arrays and builds no node. autograd's container plumbing (indexing
    the tuple of arguments) is data movement, not counted.
  - **backward matmuls**: the calls of a matmul primitive on plain arrays (the
    call that computes; a traced call hands its values on to one): `dot`,
    `matmul`, `tensordot`, `einsum`, `inner`, `outer`, and autograd's adjoints
    of dot and tensordot (matmul's call `matmul`), recomputed forward dots included.
  - **regions**: traces started during the backward pass: each is a region
    differentiated again from the inputs it kept.

A primitive that calls numpy's BLAS without going through one of these
(a matmul ufunc called on plain arrays by other code) is not seen. Imports
autograd and numpy.
"""

from __future__ import annotations

import functools
import sys
import types
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd import make_vjp
from autograd.core import VJPNode
from autograd.numpy import numpy_vjps
from autograd.tracer import Box, getval, isbox, trace

from ...contract import BackwardRecord, SavedTensor

INSTRUMENT = (
    "arrays reachable from make_vjp's backward graph (node VJP closures); primitives traced, "
    "matmul primitives run and traces started during vjp(g) (sys.setprofile)"
)

#: The code every primitive call runs (`tracer.primitive`'s `f_wrapped`, one code object).
_PRIMITIVE_CODE = anp.dot.__code__
_NODE_CODE = VJPNode.__init__.__code__
_TRACE_CODE = trace.__code__

#: The numpy functions behind autograd's matmul primitives, and its dot and tensordot adjoints
#: (primitives of their own; matmul's adjoints call `anp.matmul`, counted as it).
MATMULS = frozenset(
    primitive.fun
    for primitive in (
        anp.dot,
        anp.matmul,
        anp.tensordot,
        anp.einsum,
        anp.inner,
        anp.outer,
        numpy_vjps.dot_adjoint_0,
        numpy_vjps.dot_adjoint_1,
        numpy_vjps.tensordot_adjoint_0,
        numpy_vjps.tensordot_adjoint_1,
    )
)
#: Where autograd's container primitives live (tuple and list plumbing: data movement).
_PLUMBING = "autograd.builtins"

#: Tap names -> roles (`policies.ROLES`); a second trace's names carry `#2`.
ROLES = {"x": "x", "d1": "d1", "h": "h", "a": "a", "mask": "mask", "y": "y"}
PARAMETERS = frozenset({"w1", "b1", "w2", "b2"})


class Tap:
    """Names for the arrays a model makes, so that the record can tell them apart.

    Call it as `tap("h", value)`: it notes the array inside `value` (unboxed) and
    returns `value` untouched (`h#2` the second time, when a checkpoint reruns the
    block). It holds every array it notes, outside the graph: the walk never
    enters it.
    """

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def __call__(self, name: str, value: Any) -> Any:
        key, number = name, 2
        while key in self.arrays:
            key, number = f"{name}#{number}", number + 1
        self.arrays[key] = getval(value)
        return value


def _owner(array: np.ndarray) -> np.ndarray:
    """The array that owns `array`'s data (itself, or the base of a view)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def reachable_arrays(root: Any) -> dict[int, tuple[np.ndarray, list[str]]]:
    """Every numpy array that `root` (a closure, a node) holds alive through autograd's graph,
    by the id of the array owning its data: `(owner, the functions whose closures hold it)`.

    Walked: nodes (`vjp`, `parents`), boxes (value, node), functions (closure cells,
    defaults), `functools.partial`, tuples, lists and dicts. Any other object is not
    entered: a model's own state is not autograd's graph.
    """
    found: dict[int, tuple[np.ndarray, list[str]]] = {}
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(root, "make_vjp's closure")]
    while stack:
        value, holder = stack.pop()
        if isinstance(value, np.ndarray):  # every holder noted: arrays hold nothing to walk
            owner = _owner(value)
            holders = found.setdefault(id(owner), (owner, []))[1]
            if holder not in holders:
                holders.append(holder)
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, VJPNode):
            stack.append((value.vjp, "a node"))
            stack.extend((parent, "a node") for parent in value.parents)
        elif isinstance(value, Box):
            stack.extend([(value._value, holder), (value._node, holder)])
        elif isinstance(value, types.FunctionType):
            name = f"{value.__module__}.{value.__qualname__}"
            cells = [c.cell_contents for c in value.__closure__ or () if _filled(c)]
            extra = [*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()]
            stack.extend((item, name) for item in (*cells, *extra))
        elif isinstance(value, functools.partial):
            stack.extend((item, holder) for item in (value.func, *value.args))
            stack.extend((item, holder) for item in value.keywords.values())
        elif isinstance(value, (tuple, list)):
            stack.extend((item, holder) for item in value)
        elif isinstance(value, dict):
            stack.extend((item, holder) for item in value.values())
    return found


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


@dataclass
class Probe:
    """What runs while it is on (`with probe:`): matmul primitive calls on plain arrays,
    nodes built by primitive name, traces started. A profiler of this thread only; the
    one that was set before is put back after."""

    matmuls: int = 0
    traced: Counter = field(default_factory=Counter)
    traces: int = 0
    _previous: Any = None

    def _profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code is _PRIMITIVE_CODE:
            local = frame.f_locals
            if local.get("f_raw") in MATMULS and not any(map(isbox, local.get("args", ()))):
                self.matmuls += 1
        elif code is _NODE_CODE:
            fun = frame.f_locals.get("fun")
            raw = getattr(fun, "fun", fun)
            if getattr(raw, "__module__", "") != _PLUMBING:
                self.traced[getattr(fun, "__name__", repr(fun))] += 1
        elif code is _TRACE_CODE:
            self.traces += 1

    def __enter__(self) -> Probe:
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.setprofile(self._previous)


def _short(holder: str) -> str:
    # "autograd.numpy.numpy_vjps.dot_vjp_1.<locals>.<lambda>" -> "numpy_vjps.dot_vjp_1"
    parts = [p for p in holder.split(".") if p not in ("<locals>", "<lambda>")]
    return ".".join(parts[-2:])


def _base_name(name: str) -> str:
    return name.split("#", 1)[0]


def saved_tensors(
    root: Any, names: Mapping[str, np.ndarray], origins: Mapping[str, str]
) -> tuple[SavedTensor, ...]:
    """The arrays `root` keeps (`reachable_arrays`), named by `names` (name -> array),
    with origins: `origins[name]`, else parameter for `w1`..`b2`, else activation."""
    by_id: dict[int, str] = {}
    for name, array in names.items():
        if isinstance(array, np.ndarray):
            by_id.setdefault(id(_owner(array)), name)
    records = []
    for key, (array, holders) in reachable_arrays(root).items():
        name = by_id.get(key)
        note = "held by " + ", ".join(_short(h) for h in holders)
        if name is None:
            origin, role, note = "activation", "", f"{note}; not named, origin unknown"
        else:
            base = _base_name(name)
            origin = origins.get(name) or ("parameter" if base in PARAMETERS else "activation")
            role = "x" if origin == "input" else ROLES.get(base, "")
            note = f"{name}, {note}"
        dtype = array.dtype.name
        records.append(SavedTensor(tuple(array.shape), dtype, origin, note, role=role))
    return tuple(records)


def backward_record(
    fn: Callable[..., Any],
    args: Mapping[str, np.ndarray],
    origins: Mapping[str, str],
    cotangent: np.ndarray,
    tap: Tap | None = None,
) -> BackwardRecord:
    """What `make_vjp(fn)` over every argument keeps, and what its backward pass runs.

    **Arguments:**

    - `fn`: `fn(*args.values())`, the function differentiated (with respect to all).
    - `args`: its arguments by name; `origins`: each one's origin (`"input"`, `"parameter"`).
    - `cotangent`: pulled back through `fn`.
    - `tap`: the `Tap` that `fn`'s model notes its arrays in, for their roles.
    """
    values = list(args.values())
    vjp, _ = make_vjp(lambda *a: fn(*a), tuple(range(len(values))))(*values)
    names = dict(args)  # the arguments' names first: they win where a tap noted one too
    for name, array in (tap.arrays if tap is not None else {}).items():
        names.setdefault(name, array)
    saved = saved_tensors(vjp, names, origins)
    with Probe() as probe:
        vjp(cotangent)
    return BackwardRecord(
        INSTRUMENT,
        saved,
        recomputed=dict(probe.traced),
        checkpoint_regions=probe.traces,
        backward_matmuls=probe.matmuls,
    )
