"""TensorFlow's instrument on a port's own call: the evidence comes from the very computation
whose values the suite checks. Imports TensorFlow and numpy.

`observe(call, x)` runs `call()` (the port's `vjp`) eagerly, its `tf.function`s included
(`tf.config.run_functions_eagerly`, put back after), under one op callback
(`op_callbacks`, the hook tfdbg uses) and one profiler (`sys.setprofile`, this thread), and
never builds a model of its own:

- **Phases.** The backward pass is the outermost `imperative_grad` (what
  `GradientTape.gradient` pulls back through); the rest is forward.
- **Origins, by dataflow.** An eager op's inputs and outputs are Python tensors, the same
  objects a gradient function later reads (the tape keeps them). A forward op's input that no
  op of the call made is a *source*: x when its values are x's, a parameter when they are one
  of the call's parameters' (the record gives them), else an activation (made off the record,
  so never taken for harmless). A layout op
  (a reshape, a slice, an identity) hands its input's origin on (a view of x is x); any other
  op's outputs are an *activation* when it read x or an activation, a *parameter* when it
  read parameters alone, a *constant* when nothing. A variable's value (`ReadVariableOp`) is
  labelled as a source is, by its values, whatever its handle.
- **Saved:** the forward tensors that a backward op reads as data (shape-only ops such as
  `Shape` read none): TensorFlow keeps exactly those alive between the passes.
- **Roles** by structure: a matmul of x is d1, d1 plus a bias h, relu's output a, a matmul of
  a plus a bias y (through layout ops).
- **Recomputed:** backward ops that a recording tape sees (`evidence.RecordedOps`'s test),
  layout ops left out; **regions:** gradients taken inside the backward pass (a
  `tf.recompute_grad` differentiates its rerun with a tape of its own); **backward
  matmuls:** `MatMul` ops run in the backward pass; **forward matmuls:** those run before it.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
from tensorflow.python.eager import imperative_grad
from tensorflow.python.eager import record as tape_record
from tensorflow.python.framework import op_callbacks

from ...contract import BackwardRecord, SavedTensor
from .evidence import LAYOUT_OPS, MATMULS
from .runtime import tf

INSTRUMENT = (
    "the port's own call run eagerly under an op callback: forward tensors (origins by "
    "dataflow from x) that backward ops read; backward ops a recording tape sees; gradients "
    "taken inside the backward pass"
)

_GRADIENT_CODE = imperative_grad.imperative_grad.__code__
_ORIGINS = ("constant", "parameter", "activation")  # weakest to strongest
#: Ops that read a tensor's shape, never its data: a tensor they read need not be kept.
SHAPE_ONLY = frozenset({"Shape", "ShapeN", "Size", "Rank", "BroadcastGradientArgs"})
_MATMULS = MATMULS
#: Layout ops that hand on their first input (a view, a copy, a relabelling).
_HANDS_ON = LAYOUT_OPS - {"Const", "Shape", "Pack", "NoOp", "ReadVariableOp"}


class Watch:
    """The op callback and profiler of one observed call (see the module's docstring).

    **Arguments:** `x`, the values of the call's input, and `parameters`, those of its
    parameters, as numpy.
    """

    def __init__(self, x: np.ndarray, parameters: Iterable[np.ndarray]):
        self.x = np.asarray(x, np.float32).ravel()
        self.parameters = [np.asarray(p, np.float32).ravel() for p in parameters]
        self.origin: dict[int, str] = {}  # id of a forward tensor -> origin
        self.role: dict[int, str] = {}
        self.maker: dict[int, str] = {}
        self.held: list[Any] = []  # every labelled tensor, kept alive (ids stay unique)
        self.saved: dict[int, Any] = {}
        self.depth = 0  # nested gradients
        self.regions = 0
        self.recomputed: Counter = Counter()
        self.backward_matmuls = 0
        self.forward_matmuls = 0

    # -- the profiler: phases -----------------------------------------------------------

    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if frame.f_code is not _GRADIENT_CODE:
            return
        if event == "call":
            self.regions += self.depth > 0
            self.depth += 1
        elif event == "return":
            self.depth -= 1

    # -- the op callback ----------------------------------------------------------------

    def __call__(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        op = op_type.decode() if isinstance(op_type, bytes) else op_type
        inputs, outputs = list(inputs or ()), list(outputs or ())
        if self.depth:
            self._backward(op, inputs)
        else:
            self._forward(op, inputs, outputs)
        return None  # keep the op's outputs as they are

    def _backward(self, op: str, inputs: list) -> None:
        if op not in SHAPE_ONLY:
            for tensor in inputs:
                if id(tensor) in self.origin:
                    self.saved.setdefault(id(tensor), tensor)
        if op in _MATMULS:
            self.backward_matmuls += 1
        if op not in LAYOUT_OPS and inputs and tape_record.should_record_backprop(inputs):
            self.recomputed[op] += 1

    def _forward(self, op: str, inputs: list, outputs: list) -> None:
        self.forward_matmuls += op in _MATMULS
        found, roles = "constant", []
        for tensor in inputs:
            if id(tensor) not in self.origin:  # a source: x, or a parameter
                self._label(tensor, self._source(tensor), "", "")
            roles.append(self.role[id(tensor)])
            found = _stronger(found, _derived(self.origin[id(tensor)]))
        if op in _HANDS_ON and inputs:  # a view of x is x, a view of a is a
            first = id(inputs[0])
            origin, role = self.origin[first], self.role[first]
        elif op == "ReadVariableOp":  # a variable's value is read as a source is: by its values
            for tensor in outputs:
                self._label(tensor, self._source(tensor), "", op)
            return
        else:
            origin, role = found, _role_after(op, roles)
        for tensor in outputs:
            if id(tensor) not in self.origin:
                self._label(tensor, origin, role, op)

    def _label(self, tensor: Any, origin: str, role: str, maker: str) -> None:
        self.origin[id(tensor)] = origin
        self.role[id(tensor)] = "x" if origin == "input" else role
        self.maker[id(tensor)] = maker
        self.held.append(tensor)

    def _source(self, tensor: Any) -> str:
        if not tensor.dtype.is_floating:
            return "constant"  # an index, a shape: no data of x's or the parameters'
        values = np.asarray(tensor.numpy(), np.float32).ravel()
        if _equal(values, self.x):
            return "input"
        return "parameter" if any(_equal(values, p) for p in self.parameters) else "activation"

    @contextlib.contextmanager
    def watching(self) -> Iterator[Watch]:
        eager, previous = tf.config.functions_run_eagerly(), sys.getprofile()
        tf.config.run_functions_eagerly(True)
        op_callbacks.add_op_callback(self)
        sys.setprofile(self.profile)
        try:
            yield self
        finally:
            sys.setprofile(previous)
            op_callbacks.remove_op_callback(self)
            tf.config.run_functions_eagerly(eager)

    def classify(self) -> tuple[SavedTensor, ...]:
        """The forward tensors the backward pass read, as `SavedTensor`s by their origins."""
        records = []
        for key, tensor in self.saved.items():
            origin, role = self.origin[key], self.role[key]
            shape, dtype = tuple(tensor.shape), tensor.dtype.name
            maker = self.maker[key]
            text = {
                "input": f"x, saved as {shape}" + (f" (through {maker})" if maker else ""),
                "parameter": f"from the parameters alone, saved as {shape}",
                "constant": f"a constant, saved as {shape}",
                "activation": f"{role + ': ' if role else ''}output of {maker}",
            }[origin]
            kept = role if origin in ("input", "activation") else ""
            records.append(SavedTensor(shape, dtype, origin, text, role=kept))
        return tuple(records)


def _equal(values: np.ndarray, other: np.ndarray) -> bool:
    return values.size == other.size and bool(np.array_equal(values, other))


def _role_after(op: str, roles: list[str]) -> str:
    # The MLP's tensors by the op that makes them from the role it reads.
    known = next((r for r in roles if r), "")
    if op in _MATMULS:
        return {"x": "d1", "a": "d2"}.get(known, "")
    if op in ("BiasAdd", "AddV2", "Add"):
        return {"d1": "h", "d2": "y"}.get(known, "")
    return "a" if op == "Relu" else ""


def _derived(origin: str) -> str:
    # What an op makes from a tensor of this origin: x itself makes activations.
    return "activation" if origin == "input" else origin


def _stronger(a: str, b: str) -> str:
    return a if _ORIGINS.index(a) >= _ORIGINS.index(b) else b


def observe(call: Callable[[], Any], x: Any, parameters: Iterable[np.ndarray]) -> BackwardRecord:
    """TensorFlow's instrument on `call()`, a forward and a backward pass of the port's own
    code (see the module's docstring).

    **Arguments:** `call`, the port's call (its `vjp`); `x` and `parameters`, the values of the
    call's input and of its parameters (canonical `w1, b1, w2, b2`).
    """
    watch = Watch(np.asarray(x), parameters)
    with watch.watching():
        call()
    return BackwardRecord(
        INSTRUMENT,
        watch.classify(),
        recomputed=dict(watch.recomputed),
        checkpoint_regions=watch.regions,
        backward_matmuls=watch.backward_matmuls,
        forward_matmuls=watch.forward_matmuls,
    )
