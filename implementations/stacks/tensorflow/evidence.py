"""TensorFlow's instrument for what a backward pass saves and recomputes. Imports TensorFlow only.

The forward pass and its gradient (`GradientTape.gradient`) are traced
together into one `tf.function` graph. TensorFlow creates the forward ops
first and the backward ops after them, so the graph splits at the moment
the gradient is asked for:

- **Saved:** every forward-pass tensor that a backward-pass op reads. These
  are the tensors TensorFlow must keep alive until the backward pass runs;
  when a traced function is differentiated from outside, they are exactly
  what TensorFlow's forward/backward split returns as extra outputs of the
  forward function. Each is traced back through the graph to say whether it
  is an argument, a layout-only view of x (reshape, slice, identity:
  `"input"`), a value computed from x (`"activation"`), from parameters or
  variables alone (`"parameter"`), or from nothing (`"constant"`).
- **Recomputed:** the backward-pass ops that a `GradientTape` records. A
  gradient formula runs with no tape recording it; `tf.recompute_grad` reruns
  its function under a tape of its own, so that it can differentiate it. An
  op callback (`tensorflow.python.framework.op_callbacks`, the hook tfdbg
  uses) sees every op created during the backward pass and asks TensorFlow's
  tape stack (`tensorflow.python.eager.record.should_record_backprop`)
  whether a tape records it. Layout ops and variable reads are left out.
- **Regions:** the custom-gradient ops between the arguments and the output
  (an `IdentityN` with a `_gradient_op_type` attribute): `tf.recompute_grad`
  is a `tf.custom_gradient`, and each call leaves one. Another custom
  gradient would count too; the recomputed ops tell the two apart.

It reads the graph as traced, before Grappler's rewrites (op fusion,
constant folding). Grappler cannot merge a recomputation back into the
forward pass: `recompute_grad` makes it depend on the cotangent. Eager
execution runs the same Python code; the op callback sees the same
recomputation there (tests/tensorflow/test_tensorflow.py), but an eager tape offers no
graph to read the saved tensors from.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from tensorflow.python.eager import record as tape_record
from tensorflow.python.framework import op_callbacks

from ...contract import BackwardRecord, SavedTensor
from .runtime import tf  # first: TensorFlow's first import is the quiet one

INSTRUMENT = (
    "tf.function graph of forward + GradientTape.gradient: forward tensors the backward ops "
    "read; backward ops a recording tape sees (op callback); custom-gradient regions"
)

# Ops that move, relabel or read data without computing: not recomputation
# worth reporting, and a view of x through them is still x.
#: The ops a matmul runs as (the block's `tf.matmul`, Keras's `Dense` on a batch of one).
MATMULS = frozenset({"MatMul", "BatchMatMulV2", "BatchMatMulV3"})
LAYOUT_OPS = frozenset(
    {
        "Identity",
        "IdentityN",
        "Reshape",
        "StridedSlice",
        "ExpandDims",
        "Squeeze",
        "Transpose",
        "Cast",
        "ReadVariableOp",
        "Const",
        "Shape",
        "Pack",
        "NoOp",
    }
)


class CreatedOps:
    """An op callback: counts, by type, every op executed eagerly or added to a graph."""

    def __init__(self):
        self.counts: Counter = Counter()

    def wanted(self, inputs) -> bool:
        return True

    def __call__(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if self.wanted(inputs):
            # Eager execution names some ops in bytes, graph building in str.
            self.counts[op_type.decode() if isinstance(op_type, bytes) else op_type] += 1
        return None  # keep the op's outputs as they are

    @contextlib.contextmanager
    def watching(self) -> Iterator[CreatedOps]:
        op_callbacks.add_op_callback(self)
        try:
            yield self
        finally:
            op_callbacks.remove_op_callback(self)


class RecordedOps(CreatedOps):
    """An op callback: counts, by type, the ops a `GradientTape` will record."""

    def wanted(self, inputs) -> bool:
        return bool(inputs) and tape_record.should_record_backprop(list(inputs))

    def recomputed(self) -> dict[str, int]:
        return {name: n for name, n in self.counts.items() if name not in LAYOUT_OPS}


def backward_record(
    forward: Callable[..., Any],
    args: Sequence[Any],
    origins: Sequence[str],
    cotangent: Any,
    variables: Sequence[tf.Variable] = (),
) -> BackwardRecord:
    """Trace `forward(*args)` and its gradient in one graph, and read what it saves and reruns.

    **Arguments:**

    - `forward`: the function measured; it takes float32 tensors shaped as
      `args` and returns one tensor.
    - `args`: example arguments (numpy or tensors); only shapes are used.
    - `origins`: per argument, `"input"` (what depends on it is an
      activation) or `"parameter"`.
    - `cotangent`: pulled back through the output; only its shape is used.
    - `variables`: `tf.Variable`s that `forward` reads and whose gradients
      are taken too. Every variable the graph reads, differentiated or not,
      is a parameter.
    """
    specs = [tf.TensorSpec(np.shape(a), tf.float32) for a in args]
    specs.append(tf.TensorSpec(np.shape(cotangent), tf.float32))
    ops = RecordedOps()
    marks: dict[str, Any] = {}

    def step(*tensors):
        *inputs, ct = tensors
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            y = forward(*inputs)
        marks["boundary"] = len(tf.compat.v1.get_default_graph().get_operations())
        marks["output"] = y
        with ops.watching():
            grads = tape.gradient(
                y,
                [*inputs, *variables],
                output_gradients=ct,
                unconnected_gradients=tf.UnconnectedGradients.ZERO,
            )
        return grads

    concrete = tf.function(step, autograph=False).get_concrete_function(*specs)
    graph = concrete.graph
    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=_saved(graph, marks["boundary"], origins, concrete.variables),
        recomputed=ops.recomputed(),
        checkpoint_regions=_regions(graph, marks["boundary"], marks["output"]),
        backward_matmuls=_matmuls(graph.get_operations()[marks["boundary"] :]),
        forward_matmuls=_matmuls(graph.get_operations()[: marks["boundary"]]),
    )


def _matmuls(ops) -> int:
    """The matmul ops among `ops` (the traced graph's, created: nothing is pruned yet)."""
    return sum(op.type in MATMULS for op in ops)


def _saved(
    graph, boundary: int, origins: Sequence[str], variables: Sequence[tf.Variable]
) -> tuple[SavedTensor, ...]:
    all_ops = graph.get_operations()
    forward_ops = {op.name for op in all_ops[:boundary]}
    arguments = {t.ref(): i for i, t in enumerate(graph.inputs[: len(origins)])}
    cotangent = graph.inputs[len(origins)]
    handles = {}  # a captured variable handle -> its variable
    for external, internal in graph.captures:
        for variable in variables:
            if external is variable.handle:
                handles[internal.ref()] = variable
    from_input = _Depends(lambda t: origins[arguments[t.ref()]] == "input", arguments)
    from_anything = _Depends(lambda t: True, arguments, handles)

    saved, seen = [], set()
    for op in all_ops[boundary:]:
        for t in op.inputs:
            if t.op.name not in forward_ops or t.ref() in seen or t is cotangent:
                continue
            seen.add(t.ref())
            shape, dtype = tuple(t.shape.as_list()), t.dtype.name
            if t.ref() in arguments:
                index = arguments[t.ref()]
                role = "x" if origins[index] == "input" else ""
                saved.append(
                    SavedTensor(shape, dtype, origins[index], f"argument {index}", role=role)
                )
            elif t.ref() in handles:
                variable = handles[t.ref()]
                note = f"variable {variable.name} (its handle: read again in backward)"
                shape, dtype = tuple(variable.shape.as_list()), variable.dtype.name
                saved.append(SavedTensor(shape, dtype, "parameter", note))
            elif from_input(t):
                source = _layout_source(t)
                if source is not None and source.ref() in arguments:
                    note = f"argument {arguments[source.ref()]}, as {t.op.type} {t.op.name}"
                    origin = origins[arguments[source.ref()]]
                    role = "x" if origin == "input" else ""
                    saved.append(SavedTensor(shape, dtype, origin, note, role=role))
                else:
                    role = _role(t, from_input, arguments, origins)
                    saved.append(SavedTensor(shape, dtype, "activation", _note(t), role=role))
            elif from_anything(t):
                saved.append(SavedTensor(shape, dtype, "parameter", f"from parameters: {_note(t)}"))
            else:
                saved.append(SavedTensor(shape, dtype, "constant", _note(t)))
    return tuple(saved)


class _Depends:
    """Whether a graph tensor depends on a flagged argument (or, with `handles`, a variable)."""

    def __init__(self, flag: Callable[[Any], bool], arguments: dict, handles: dict | None = None):
        self.flag, self.arguments, self.handles = flag, arguments, handles or {}
        self.memo: dict[str, bool] = {}

    def __call__(self, tensor) -> bool:
        if tensor.ref() in self.arguments:
            return self.flag(tensor)
        if tensor.ref() in self.handles:
            return True
        return self._op(tensor.op)

    def _op(self, op) -> bool:
        if op.name not in self.memo:
            self.memo[op.name] = False  # no cycles in a forward graph; guards recursion
            self.memo[op.name] = any(self(t) for t in op.inputs)
        return self.memo[op.name]


def _layout_source(tensor):
    """The tensor `tensor` is a layout-only view of (following data inputs); None if computed."""
    while tensor.op.type in LAYOUT_OPS and tensor.op.type != "Const":
        if tensor.op.type == "IdentityN":
            tensor = tensor.op.inputs[tensor.value_index]
        elif tensor.op.inputs:
            tensor = tensor.op.inputs[0]  # the data; any other inputs are shapes or indices
        else:
            return tensor  # a placeholder: an argument, or a captured value
    return tensor if tensor.op.type == "Placeholder" else None


_AFTER_MATMUL = {"x": "d1", "a": "d2"}
_AFTER_BIAS = {"d1": "h", "d2": "y"}


def _role(tensor, from_input, arguments: dict, origins: Sequence[str]) -> str:
    """Which of the MLP's tensors (x, d1, h, a, y) a forward tensor is, following its
    producers back to x; "" for anything else (d2 = a @ W2 included)."""
    if tensor.ref() in arguments:
        return "x" if origins[arguments[tensor.ref()]] == "input" else ""
    op = tensor.op
    inputs = [t for t in op.inputs if from_input(t)]
    if op.type in LAYOUT_OPS and inputs:
        return _role(inputs[0], from_input, arguments, origins)
    if len(inputs) != 1:
        return ""
    before = _role(inputs[0], from_input, arguments, origins)
    if op.type in ("MatMul", "BatchMatMulV2"):
        return _AFTER_MATMUL.get(before, "")
    if op.type in ("BiasAdd", "AddV2", "Add"):
        return _AFTER_BIAS.get(before, "")
    if op.type == "Relu" and before == "h":
        return "a"
    return ""


def _note(tensor) -> str:
    return f"output of {tensor.op.type} {tensor.op.name}"


def _regions(graph, boundary: int, output) -> int:
    """Custom-gradient ops among the output's ancestors in the forward pass."""
    forward = graph.get_operations()[:boundary]
    custom = {op.name for op in forward if "_gradient_op_type" in op.node_def.attr}
    found, stack, visited = set(), [output.op], set()
    while stack:
        op = stack.pop()
        if op.name in visited:
            continue
        visited.add(op.name)
        if op.name in custom:
            found.add(op.name)
        stack.extend(t.op for t in op.inputs)
    return len(found)
