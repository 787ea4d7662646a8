"""autograd's instrument: a context around the very call that is checked, giving a `Record`.
Imports autograd and numpy.

`watch(x, parameters)` runs the call under one profiler (`sys.setprofile`, this thread) and
never builds a model of its own; `peak()` runs it under tracemalloc (numpy reports its array
allocations to it). The two are apart because the profiler allocates as it runs.

- **Phases.** The backward pass is the outermost `autograd.core.backward_pass` (every
  `make_vjp`, `grad` and `value_and_grad` pulls back through it); the rest is forward.
- **Saved:** when the outermost backward pass starts, every numpy array its `end_node` holds
  alive through the graph (`reachable_arrays`: nodes' `parents` and `vjp` closures): what the
  forward pass left for the backward. A view counts as the array owning its data. Memory
  space: `device`, the CPU's memory, where numpy computes (it has no other to offload to).
- **Origins, by dataflow.** Each primitive that computes (autograd's `f_wrapped` called on
  plain arrays) in the forward pass labels its result from what it read: an array no
  primitive made is a *source*, x when its values are x's, a parameter when they are one of
  the call's parameters', else an activation (unknown is never taken for harmless); a result
  read from x (or an activation) is an *activation*, from parameters alone a *parameter*, from
  nothing a *constant*. Roles by structure: a dot of x is d1, d1 plus a bias h, relu's output
  a, a dot of a plus a bias y, and so is what the block's function returns.
- **Matmuls:** calls of autograd's matmul primitives (and its dot and tensordot adjoints) on
  plain arrays, per phase. **Recomputed, reruns:** nodes built and traces started in the
  backward pass. **Regions:** `remat.checkpoint` primitives computing in the forward pass.
- **Evaluations:** each call of the block's function (`block.block`), its index told by
  its `w1` (the very array, else its values), with the block's matmuls it ran.
- **Peak:** tracemalloc's peak from the start of the outermost backward pass (its peak reset
  there), above the bytes traced when `peak()` began.

A primitive that calls numpy's BLAS without going through one of these (a matmul ufunc called
on plain arrays by other code) is not seen.
"""

from __future__ import annotations

import functools
import gc
import sys
import tracemalloc
import types
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd import core
from autograd.core import VJPNode
from autograd.numpy import numpy_vjps
from autograd.tracer import Box, getval, isbox, trace

from ...contract import SavedTensor
from ...measuring.record import MATMULS as BLOCK_MATMULS
from ...measuring.record import NotObservable, Record
from ..block_runs import PhasedWatch
from ..value_labels import derived, role_after, stronger
from . import block as block_module
from . import remat

INSTRUMENT = (
    "the port's own call under sys.setprofile: arrays the backward graph holds when the "
    "outermost backward_pass starts, origins by dataflow from x through the primitives; "
    "nodes built, traces started and matmul primitives run in that pass"
)
PEAK = "tracemalloc's peak from the outermost backward_pass's start, above the bytes before"
METHODS = {
    "saved": "arrays reachable from the backward graph when the outermost backward_pass starts",
    "evaluations": "calls of the block's function, by its w1, with the matmul primitives inside",
    "forward_matmuls": "matmul primitives on plain arrays before the backward pass",
    "backward_matmuls": "matmul primitives on plain arrays in the backward pass",
    "recomputed": "nodes built in the backward pass, by primitive",
    "regions": "remat.checkpoint primitives computing in the forward pass",
    "reruns": "traces started in the backward pass",
}

#: Where every array is kept: numpy computes in the CPU's memory, its device; there is no other.
SPACE = "device"
_PRIMITIVE_CODE = anp.dot.__code__  # `tracer.primitive`'s `f_wrapped`: every primitive's
_NODE_CODE = VJPNode.__init__.__code__
_TRACE_CODE = trace.__code__
_BACKWARD_CODE = core.backward_pass.__code__
_BLOCK_CODE = block_module.block.__code__
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
#: The block's steps (`value_labels.role_after`) by the primitives that take them.
_STEPS = {"dot": "matmul", "matmul": "matmul", "add": "add", "relu": "relu"}


class Watch(PhasedWatch):
    """The profiler of one watched call (see the module's docstring). `x` and `parameters`
    (canonical order, four per block) are the call's values."""

    instrument, methods = INSTRUMENT, METHODS
    no_backward = "the call ran no autograd backward_pass"

    def __init__(self, x: Any, parameters: Iterable[Any]):
        super().__init__()  # depth: nested backward passes
        params = [getval(p) for p in parameters]
        self.x = np.asarray(getval(x), np.float32).ravel()
        self.values = [np.asarray(p, np.float32).ravel() for p in params]
        # the block's kernels: the very arrays (by id), and their values, -> (block, matmul)
        self.kernels = {id(_owner(p)): (i // 4, BLOCK_MATMULS[i % 4 // 2]) for i, p in
                        enumerate(params) if i % 2 == 0 and isinstance(p, np.ndarray)}  # fmt: skip
        self.origin: dict[int, str] = {}  # id of the owning array -> origin
        self.role: dict[int, str] = {}
        self.maker: dict[int, str] = {}  # id -> the primitive that made it
        self.held: list[np.ndarray] = []  # every labelled array, kept alive (ids stay unique)
        self.saved: dict[int, tuple[np.ndarray, list[str]]] | None = None
        self.traced: Counter = Counter()  # per phase and primitive
        self.traces: Counter = Counter()

    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code is _PRIMITIVE_CODE:
            self._primitive(frame.f_locals, event, arg)
        elif code is _BACKWARD_CODE:
            if event == "call":
                if self.depth == 0 and self.saved is None:
                    self.saved = reachable_arrays(frame.f_locals["end_node"])
                self.depth += 1
            elif event == "return":
                self.depth -= 1
        elif code is _BLOCK_CODE:
            closed = self.block_event(frame, event)
            # run plain (inside a region), its last add is numpy's, no primitive's
            if closed and not self.depth and _unlabelled(arg, self.origin):
                self._label(arg, "activation", "y", "the block")
        elif event == "call" and code is _NODE_CODE:
            fun = frame.f_locals.get("fun")
            raw = getattr(fun, "fun", fun)
            if getattr(raw, "__module__", "") != _PLUMBING:
                self.traced[self.phase, getattr(fun, "__name__", repr(fun))] += 1
        elif event == "call" and code is _TRACE_CODE:
            self.traces[self.phase] += 1

    def _primitive(self, local: dict, event: str, result: Any) -> None:
        args, f_raw = local.get("args", ()), local.get("f_raw")
        if any(map(isbox, args)):
            return  # a traced call hands its plain values on to the call that computes
        if event == "call" and f_raw in MATMULS:
            self.matmuls[self.phase] += 1
            if self.blocks.open:
                self._note_matmul(args)
        elif event == "call" and f_raw in remat.REGION_FUNCTIONS and not self.depth:
            self.regions += 1
        elif event == "return" and not self.depth:
            self._label_result(f_raw, args, result)

    # -- evaluations --------------------------------------------------------------------

    def _kernel(self, array: Any) -> tuple[int, str] | None:
        if not isinstance(array, np.ndarray):
            return None
        found = self.kernels.get(id(_owner(array)))
        if found is None:  # a copy of the parameters (a port's own): known by its values
            for i in range(0, len(self.values), 2):
                if _equal(array, self.values[i]):
                    return i // 4, BLOCK_MATMULS[i % 4 // 2]
        return found

    def _block_of(self, w1: Any) -> int:
        found = self._kernel(getval(w1))
        return found[0] if found else -1

    def _note_matmul(self, args: tuple) -> None:
        index, ran = self.blocks.open[-1]
        for array in args:
            found = self._kernel(array)
            if found and found[0] == index:
                ran.append(found[1])
                return

    # -- origins ------------------------------------------------------------------------

    def _label_result(self, f_raw: Any, args: tuple, result: Any) -> None:
        found, roles = "constant", []
        for array in _arrays(args):
            key = id(_owner(array))
            if key not in self.origin:  # a source: x, or a parameter
                self._label(array, self._source(array))
            found = stronger(found, derived(self.origin[key]))
            roles.append(self.role.get(key, ""))
        name = getattr(f_raw, "__name__", "")
        for array in _arrays((result,)):
            if id(_owner(array)) not in self.origin:
                self._label(array, found, role_after(_STEPS.get(name, ""), roles), name)

    def _label(self, array: np.ndarray, origin: str, role: str = "", maker: str = "") -> None:
        key = id(_owner(array))
        self.origin[key] = origin
        self.role[key] = "x" if origin == "input" else role
        self.maker[key] = maker
        self.held.append(array)

    def _source(self, array: np.ndarray) -> str:
        if _equal(array, self.x):
            return "input"
        return "parameter" if any(_equal(array, p) for p in self.values) else "activation"

    def classify(self) -> tuple[SavedTensor, ...]:
        """The arrays the backward pass found held, as `SavedTensor`s by their origins."""
        records = []
        for key, (array, holders) in (self.saved or {}).items():
            origin = self.origin.get(key) or self._source(array)
            held = "held by " + ", ".join(_short(h) for h in holders)
            role = "x" if origin == "input" else self.role.get(key, "")
            text = {
                "input": f"x, {held}",
                "parameter": f"from the parameters alone, {held}",
                "constant": f"a constant, {held}",
                "activation": f"{role + ': ' if role else ''}output of "
                f"{self.maker.get(key) or 'numpy outside any primitive'}, {held}",
            }[origin]
            kept_role = role if origin in ("input", "activation") else ""
            shape, dtype = tuple(array.shape), array.dtype.name
            records.append(SavedTensor(shape, dtype, origin, text, kept_role, SPACE))
        return tuple(records)

    def record(self) -> Record:
        """What the call showed (`Record`); saved and recomputed only once a backward ran."""
        recomputed = {n: c for (phase, n), c in self.traced.items() if phase == "backward"}
        return self.counted(
            self.saved is not None, self.classify, recomputed, self.traces["backward"]
        )


@contextmanager
def watch(x: Any, parameters: Iterable[Any]) -> Iterator[Watch]:
    """The profiler around the call in the `with` block; `.record()` after it. The profiler
    that was set before is put back."""
    seen = Watch(x, parameters)
    previous = sys.getprofile()
    sys.setprofile(seen.profile)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


def observe(call: Any, x: Any, parameters: Iterable[Any]) -> Record:
    """`call()` (the port's own forward and backward) watched: its `Record`."""
    with watch(x, parameters) as seen:
        call()
    return seen.record()


class Peak:
    """tracemalloc's peak over the backward pass of the call in `peak()`'s block."""

    def __init__(self):
        self.depth, self.bytes = 0, None

    def record(self) -> Record:
        figure = NotObservable("the call ran no backward pass") if self.bytes is None else None
        return Record(PEAK, {"peak_bytes": PEAK}, peak_bytes=figure or self.bytes)


@contextmanager
def peak() -> Iterator[Peak]:
    """tracemalloc around the call in the `with` block, its peak reset as the outermost
    `autograd.core.backward_pass` starts (`make_vjp`'s pullback reads that name each call).
    A caller's tracing is left on."""
    found, original = Peak(), core.backward_pass

    def backward_pass(g: Any, end_node: Any) -> Any:
        if not found.depth:
            tracemalloc.reset_peak()
        found.depth += 1
        try:
            return original(g, end_node)
        finally:
            found.depth -= 1

    gc.collect()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    core.backward_pass = backward_pass
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        yield found
        found.bytes = tracemalloc.get_traced_memory()[1] - before
    finally:
        core.backward_pass = original
        if started:
            tracemalloc.stop()


# -- the graph ----------------------------------------------------------------------------


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


def _short(holder: str) -> str:
    # "autograd.numpy.numpy_vjps.dot_vjp_1.<locals>.<lambda>" -> "numpy_vjps.dot_vjp_1"
    parts = [p for p in holder.split(".") if p not in ("<locals>", "<lambda>")]
    return ".".join(parts[-2:])


def _unlabelled(value: Any, origin: dict[int, str]) -> bool:
    """Whether `value` is an array owning its data that no primitive has labelled."""
    return isinstance(value, np.ndarray) and value.base is None and id(value) not in origin


def _equal(array: np.ndarray, values: np.ndarray) -> bool:
    if array.size != values.size or not np.issubdtype(array.dtype, np.floating):
        return False
    return bool(np.array_equal(np.asarray(array, np.float32).ravel(), values))


def _arrays(values: Any) -> Iterator[np.ndarray]:
    """The numpy arrays in `values`, through tuples and lists."""
    for value in values:
        if isinstance(value, np.ndarray):
            yield value
        elif isinstance(value, (tuple, list)):
            yield from _arrays(value)
