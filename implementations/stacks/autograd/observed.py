"""autograd's instrument on a port's own call: the evidence comes from the very computation
whose values the suite checks. Imports autograd and numpy.

`observe(call, x)` runs `call()` (the port's `vjp`, or its `nn_checkpoint_forward` under a
`make_vjp` of the instrument's and the backward pass of its output) under one profiler
(`sys.setprofile`, this thread) and never builds a model of its own:

- **Phases.** The backward pass is the outermost `autograd.core.backward_pass` (every
  `make_vjp`, `grad` and `value_and_grad` pulls back through it); the rest is forward.
- **Saved:** when the outermost backward pass starts, every numpy array its `end_node` holds
  alive (`evidence.reachable_arrays`): what the forward pass left for the backward.
- **Origins, by dataflow.** Each primitive that computes (autograd's `f_wrapped` called on
  plain arrays) in the forward pass labels its result from what it read: an array no
  primitive made is a *source*, x when its values are x's, a parameter when they are one of
  the call's parameters' (the record gives them), else an activation (numpy run outside any
  primitive made it: unknown is never taken for harmless); a result read from x (or from an
  activation) is an *activation*, from parameters alone a *parameter*, from nothing a
  *constant*. A result that is one of its inputs (tuple plumbing) keeps its label. A saved
  array that no primitive of the call made or read is labelled as a source is.
- **Roles** by structure: a dot of x is d1, d1 plus a bias h, relu's output a, a dot of a
  plus a bias y.
- **Recomputed, regions, backward matmuls:** as `evidence.Probe` counts them, in the backward
  pass only (nodes built, traces started, matmul primitives on plain arrays); **forward
  matmuls:** matmul primitives on plain arrays before it.
"""

from __future__ import annotations

import sys
import types
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
from autograd.core import backward_pass
from autograd.tracer import isbox

from ...contract import BackwardRecord, SavedTensor
from .evidence import (
    _NODE_CODE,
    _PLUMBING,
    _PRIMITIVE_CODE,
    _TRACE_CODE,
    MATMULS,
    _owner,
    _short,
    reachable_arrays,
)

INSTRUMENT = (
    "the port's own call under sys.setprofile: arrays the backward graph holds when the "
    "outermost backward_pass starts, origins by dataflow from x through the primitives; "
    "nodes built, traces started and matmul primitives run in that pass"
)

_BACKWARD_CODE = backward_pass.__code__
_ORIGINS = ("constant", "parameter", "activation")  # weakest to strongest
_MATMUL_NAMES = frozenset({"dot", "matmul"})


class Watch:
    """The profiler of one observed call (see the module's docstring).

    **Arguments:** `x`, the values of the call's input, and `parameters`, those of its
    parameters, as numpy.
    """

    def __init__(self, x: np.ndarray, parameters: Iterable[np.ndarray]):
        self.x = np.asarray(x, np.float32).ravel()
        self.parameters = [np.asarray(p, np.float32).ravel() for p in parameters]
        self.origin: dict[int, str] = {}  # id of the owning array -> origin
        self.role: dict[int, str] = {}
        self.maker: dict[int, str] = {}  # id -> the primitive that made it
        self.held: list[np.ndarray] = []  # every labelled array, kept alive (ids stay unique)
        self.depth = 0  # nested backward passes
        self.saved: dict[int, tuple[np.ndarray, list[str]]] | None = None
        self.traced: Counter = Counter()
        self.traces = 0
        self.matmuls = 0
        self.forward_matmuls = 0

    # -- the profiler -------------------------------------------------------------------

    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code is _BACKWARD_CODE:
            if event == "call":
                if self.depth == 0 and self.saved is None:
                    self.saved = reachable_arrays(frame.f_locals["end_node"])
                self.depth += 1
            elif event == "return":
                self.depth -= 1
        elif code is _PRIMITIVE_CODE:
            local = frame.f_locals
            plain = not any(map(isbox, local.get("args", ())))
            if event == "call" and plain and local.get("f_raw") in MATMULS:
                if self.depth:
                    self.matmuls += 1
                else:
                    self.forward_matmuls += 1
            elif event == "return" and not self.depth and plain:
                self._label_result(local.get("f_raw"), local.get("args", ()), arg)
        elif event == "call" and self.depth and code is _NODE_CODE:
            fun = frame.f_locals.get("fun")
            raw = getattr(fun, "fun", fun)
            if getattr(raw, "__module__", "") != _PLUMBING:
                self.traced[getattr(fun, "__name__", repr(fun))] += 1
        elif event == "call" and self.depth and code is _TRACE_CODE:
            self.traces += 1

    # -- origins ------------------------------------------------------------------------

    def _label_result(self, f_raw: Any, args: tuple, result: Any) -> None:
        found, roles = "constant", []
        for array in _arrays(args):
            key = id(_owner(array))
            if key not in self.origin:  # a source: x, or a parameter
                self._label(array, self._source(array))
            found = _stronger(found, _derived(self.origin[key]))
            roles.append(self.role.get(key, ""))
        name = getattr(f_raw, "__name__", "")
        for array in _arrays((result,)):
            if id(_owner(array)) not in self.origin:
                self._label(array, found, _role_after(name, roles), name)

    def _label(self, array: np.ndarray, origin: str, role: str = "", maker: str = "") -> None:
        key = id(_owner(array))
        self.origin[key] = origin
        self.role[key] = "x" if origin == "input" else role
        self.maker[key] = maker
        self.held.append(array)

    def _source(self, array: np.ndarray) -> str:
        if _equal(array, self.x):
            return "input"
        return "parameter" if any(_equal(array, p) for p in self.parameters) else "activation"

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
            records.append(
                SavedTensor(
                    tuple(array.shape),
                    array.dtype.name,
                    origin,
                    text,
                    role=role if origin in ("input", "activation") else "",
                )
            )
        return tuple(records)


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


def _role_after(name: str, roles: list[str]) -> str:
    # The MLP's tensors by the primitive that makes them from the role it reads.
    if name in _MATMUL_NAMES:
        return {"x": "d1", "a": "d2"}.get(next((r for r in roles if r), ""), "")
    if name == "add":
        return {"d1": "h", "d2": "y"}.get(next((r for r in roles if r), ""), "")
    if name == "relu":  # the MLP's one relu, whatever made its input (numpy or a primitive)
        return "a"
    return ""


def _derived(origin: str) -> str:
    # What a primitive makes from an array of this origin: x itself makes activations.
    return "activation" if origin == "input" else origin


def _stronger(a: str, b: str) -> str:
    return a if _ORIGINS.index(a) >= _ORIGINS.index(b) else b


def observe(call: Callable[[], Any], x: Any, parameters: Iterable[np.ndarray]) -> BackwardRecord:
    """autograd's instrument on `call()`, a forward and a backward pass of the port's own code.

    **Arguments:** `call`, the port's call; `x` and `parameters`, the values of the call's
    input and of its parameters (canonical `w1, b1, w2, b2`).
    """
    watch = Watch(np.asarray(x), parameters)
    previous = sys.getprofile()
    sys.setprofile(watch.profile)
    try:
        call()
    finally:
        sys.setprofile(previous)
    return BackwardRecord(
        INSTRUMENT,
        watch.classify(),
        recomputed=dict(watch.traced),
        checkpoint_regions=watch.traces,
        backward_matmuls=watch.matmuls,
        forward_matmuls=watch.forward_matmuls,
    )
