"""TensorFlow's instrument: contexts around the very call that is checked, each giving a
`Record`, and the graph instrument the traced records read. Imports TensorFlow and numpy.

**`watch(x, parameters)`** runs the call eagerly, its `tf.function`s included
(`tf.config.run_functions_eagerly`, put back after), under one op callback (`op_callbacks`,
the hook tfdbg uses) and one profiler (`sys.setprofile`, this thread), and never builds a
model of its own:

- **Phases.** The backward pass is the outermost `imperative_grad` (what
  `GradientTape.gradient` pulls back through); the rest is forward.
- **Origins, by dataflow.** An eager op's inputs and outputs are Python tensors, the same
  objects a gradient function later reads (the tape keeps them). A forward op's input that no
  op of the call made is a *source*: x when its values are x's, a parameter when they are one
  of the call's parameters', else an activation (never taken for harmless). A layout op (a
  reshape, a slice, an identity) hands its input's origin on; any other op's outputs are an
  *activation* when it read x or an activation, a *parameter* when it read parameters alone,
  a *constant* when nothing. A variable's value (`ReadVariableOp`) is a source.
- **Saved:** the forward tensors that a backward op reads as data (shape-only ops read
  none): TensorFlow keeps exactly those alive between the passes. Roles by structure: a
  matmul of x is d1, d1 plus a bias h, relu's output a, a matmul of a plus a bias y. Memory
  space: `device`, the device TensorFlow computes on (the CPU's memory here).
- **Matmuls** per phase: `MatMul` ops run. **Recomputed:** backward ops a recording tape
  sees (`record.should_record_backprop`), layout ops left out. **Reruns:** gradients taken
  inside the backward pass (a `tf.recompute_grad` differentiates its rerun with a tape of its
  own). **Regions:** calls of `tf.recompute_grad`'s `inner` in the forward pass.
- **Evaluations:** each call of the block's function (`block.block`), its index told by its
  `w1`'s values (a region's rerun reads identities of its inputs), with the block's matmuls
  it ran (a `MatMul` whose kernel is that block's `w1` or `w2`).

**`peak()`**: TensorFlow's CPU allocator statistics (`get_memory_info("CPU:0")`), reset as
the outermost `imperative_grad` starts, above the bytes in use before the call. They leave out
allocations under `SEES_FROM` (256 KiB: oneDNN's small-size allocator serves them apart), so
the driver reads the peak at batches that reach it (`driver.batch_peak`).

**`program(step, args, variant)`**: what a compiled program (`block.program`) itself runs:
a `tf.function`'s `MatMul` ops as traced (before Grappler, which cannot merge a rerun into
the forward: `recompute_grad` ties it to the cotangent), split where `imperative_grad` is
called; an XLA program's `dot` ops in its optimized HLO, its passes one program.

**`backward_record(forward, args, origins, cotangent, variables=())`** (the stack's
`record`, for traced records: the exercise's, Keras's) traces `forward` and its gradient into
one `tf.function` graph, split where the gradient is asked for: saved are the forward tensors
a backward op reads, followed back to an argument, a view of x, x's data (an activation),
parameters or variables alone, or nothing; regions, the custom-gradient ops (`IdentityN` with
`_gradient_op_type`) among the output's ancestors.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from .runtime import tf  # first: TensorFlow's first import is the quiet one

# isort: split
import numpy as np
from tensorflow.python.eager import imperative_grad
from tensorflow.python.eager import record as tape_record
from tensorflow.python.framework import op_callbacks
from tensorflow.python.ops import custom_gradient

from ...contract import BackwardRecord, SavedTensor
from ...measuring.record import MATMULS as BLOCK_MATMULS
from ...measuring.record import NotObservable, Record
from ..block_runs import PhasedWatch
from ..hlo import hlo_dot_count
from ..value_labels import derived, role_after, stronger
from . import block as block_module

INSTRUMENT = (
    "the port's own call run eagerly under an op callback: forward tensors (origins by "
    "dataflow from x) that backward ops read; backward ops a recording tape sees; gradients "
    "taken inside the backward pass"
)
TRACED = (
    "tf.function graph of forward + GradientTape.gradient: forward tensors the backward ops "
    "read; backward ops a recording tape sees (op callback); custom-gradient regions"
)
METHODS = {
    "saved": "forward tensors a backward op read as data, the eager program's (op callback)",
    "evaluations": "calls of the block's function, by its w1's values, with the MatMuls inside",
    "forward_matmuls": "MatMul ops run before the outermost imperative_grad (eager)",
    "backward_matmuls": "MatMul ops run inside the outermost imperative_grad (eager)",
    "recomputed": "backward ops a recording GradientTape sees, by type, layout ops left out",
    "regions": "calls of tf.recompute_grad's inner in the forward pass",
    "reruns": "gradients taken inside the backward pass (imperative_grad, nested)",
}
PEAK = "TF CPU allocator peak (get_memory_info) from the outermost imperative_grad's start"
#: The smallest allocation the allocator statistics see (measured in a test).
SEES_FROM = 256 * 1024
SPACE = "device"
_DEVICE = "CPU:0"

#: The ops a matmul runs as (the block's `tf.matmul`, Keras's `Dense` on a batch of one).
MATMULS = frozenset({"MatMul", "BatchMatMulV2", "BatchMatMulV3"})
#: The block's steps (`value_labels.role_after`) by the ops that take them.
_STEPS = {
    **dict.fromkeys(MATMULS, "matmul"),
    **dict.fromkeys(("BiasAdd", "AddV2", "Add"), "add"),
    "Relu": "relu",
}
#: Ops that move, relabel or read data without computing: a view of x through them is x.
LAYOUT_OPS = frozenset(
    {"Identity", "IdentityN", "Reshape", "StridedSlice", "ExpandDims", "Squeeze", "Transpose",
     "Cast", "ReadVariableOp", "Const", "Shape", "Pack", "NoOp"}
)  # fmt: skip
#: Ops that read a tensor's shape, never its data: a tensor they read need not be kept.
SHAPE_ONLY = frozenset({"Shape", "ShapeN", "Size", "Rank", "BroadcastGradientArgs"})
#: Layout ops that hand on their first input (a view, a copy, a relabelling).
_HANDS_ON = LAYOUT_OPS - {"Const", "Shape", "Pack", "NoOp", "ReadVariableOp"}
_GRADIENT_CODE = imperative_grad.imperative_grad.__code__
_REGION_CODE = next(
    c for c in custom_gradient.recompute_grad.__code__.co_consts
    if isinstance(c, types.CodeType) and c.co_name == "inner"
)  # fmt: skip
_BLOCK_CODE = block_module.block.__code__


def _name(op_type: Any) -> str:
    return op_type.decode() if isinstance(op_type, bytes) else op_type


class Watch(PhasedWatch):
    """The op callback and profiler of one watched call (see the module's docstring). `x` and
    `parameters` (canonical order, four per block) are the call's values."""

    instrument, methods = INSTRUMENT, METHODS
    no_backward = "the call ran no GradientTape.gradient"

    def __init__(self, x: Any, parameters: Iterable[Any]):
        super().__init__()
        self.x = np.asarray(x, np.float32).ravel()
        self.parameters = [np.asarray(p, np.float32).ravel() for p in parameters]
        self.origin: dict[int, str] = {}  # id of a forward tensor -> origin
        self.role: dict[int, str] = {}
        self.maker: dict[int, str] = {}
        self.held: list[Any] = []  # every labelled tensor, kept alive (ids stay unique)
        self.saved: dict[int, Any] = {}
        self.gradients = 0
        self.recomputed: Counter = Counter()

    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code is _GRADIENT_CODE:
            if event == "call":
                self.gradients += 1
                self.depth += 1
            elif event == "return":
                self.depth -= 1
        elif code is _REGION_CODE and event == "call" and not self.depth:
            self.regions += 1
        elif code is _BLOCK_CODE:
            self.block_event(frame, event)

    def __call__(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        op, inputs, outputs = _name(op_type), list(inputs or ()), list(outputs or ())
        if op in MATMULS:
            self.matmuls[self.phase] += 1
            if self.blocks.open and len(inputs) == 2:
                self._note_matmul(inputs[1])
        if self.depth:
            self._backward(op, inputs)
        else:
            self._forward(op, inputs, outputs)
        return None  # keep the op's outputs as they are

    # -- evaluations --------------------------------------------------------------------

    def _block_of(self, w1: Any) -> int:
        if w1 is None:
            return -1
        values = np.asarray(w1, np.float32).ravel()
        found = (i // 4 for i in range(0, len(self.parameters), 4))
        return next((b for b in found if _equal(values, self.parameters[4 * b])), -1)

    def _note_matmul(self, kernel: Any) -> None:
        index, ran = self.blocks.open[-1]
        if index < 0:
            return
        values = np.asarray(kernel, np.float32).ravel()
        for offset, matmul in zip((0, 2), BLOCK_MATMULS, strict=True):
            if _equal(values, self.parameters[4 * index + offset]):
                ran.append(matmul)
                return

    # -- origins ------------------------------------------------------------------------

    def _backward(self, op: str, inputs: list) -> None:
        if op not in SHAPE_ONLY:
            for tensor in inputs:
                if id(tensor) in self.origin:
                    self.saved.setdefault(id(tensor), tensor)
        if op not in LAYOUT_OPS and inputs and tape_record.should_record_backprop(inputs):
            self.recomputed[op] += 1

    def _forward(self, op: str, inputs: list, outputs: list) -> None:
        found, roles = "constant", []
        for tensor in inputs:
            if id(tensor) not in self.origin:  # a source: x, or a parameter
                self._label(tensor, self._source(tensor), "", "")
            roles.append(self.role[id(tensor)])
            found = stronger(found, derived(self.origin[id(tensor)]))
        if op in _HANDS_ON and inputs:  # a view of x is x, a view of a is a
            origin, role = self.origin[id(inputs[0])], self.role[id(inputs[0])]
        elif op == "ReadVariableOp":  # a variable's value is read as a source is: by its values
            for tensor in outputs:
                self._label(tensor, self._source(tensor), "", op)
            return
        else:
            origin, role = found, role_after(_STEPS.get(op, ""), roles)
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

    def classify(self) -> tuple[SavedTensor, ...]:
        """The forward tensors the backward pass read, as `SavedTensor`s by their origins."""
        records = []
        for key, tensor in self.saved.items():
            origin, role, maker = self.origin[key], self.role[key], self.maker[key]
            shape, dtype = tuple(tensor.shape), tensor.dtype.name
            text = {
                "input": f"x, saved as {shape}" + (f" (through {maker})" if maker else ""),
                "parameter": f"from the parameters alone, saved as {shape}",
                "constant": f"a constant, saved as {shape}",
                "activation": f"{role + ': ' if role else ''}output of {maker}",
            }[origin]
            kept = role if origin in ("input", "activation") else ""
            records.append(SavedTensor(shape, dtype, origin, text, kept, SPACE))
        return tuple(records)

    def record(self) -> Record:
        """What the call showed (`Record`); saved and recomputed only once a backward ran."""
        ran = self.gradients > 0
        return self.counted(ran, self.classify, dict(self.recomputed), self.gradients - 1)


@contextlib.contextmanager
def watch(x: Any, parameters: Iterable[Any]) -> Iterator[Watch]:
    """The op callback and profiler around the call in the `with` block, `tf.function`s run
    eagerly; `.record()` after it. All three are put back as they were."""
    seen = Watch(x, parameters)
    eager, previous = tf.config.functions_run_eagerly(), sys.getprofile()
    tf.config.run_functions_eagerly(True)
    op_callbacks.add_op_callback(seen)
    sys.setprofile(seen.profile)
    try:
        yield seen
    finally:
        sys.setprofile(previous)
        op_callbacks.remove_op_callback(seen)
        tf.config.run_functions_eagerly(eager)


def observe(call: Callable[[], Any], x: Any, parameters: Iterable[Any]) -> BackwardRecord:
    """`call()` (the port's own forward and backward) watched, as the properties read it."""
    with watch(np.asarray(x), parameters) as seen:
        call()
    return seen.record().backward_record()


class Peak:
    """The allocator's peak over the backward pass of the call in `peak()`'s block."""

    def __init__(self):
        self.started, self.bytes = False, None

    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if frame.f_code is _GRADIENT_CODE and event == "call" and not self.started:
            tf.config.experimental.reset_memory_stats(_DEVICE)
            self.started = True

    def record(self) -> Record:
        figure = NotObservable("the call ran no backward pass") if self.bytes is None else None
        return Record(PEAK, {"peak_bytes": PEAK}, peak_bytes=figure or self.bytes)


@contextlib.contextmanager
def peak() -> Iterator[Peak]:
    """The allocator statistics around the call in the `with` block, reset as the outermost
    `imperative_grad` starts (a profiler sees its call); the profiler before is put back."""
    found, previous = Peak(), sys.getprofile()
    memory = tf.config.experimental
    before = memory.get_memory_info(_DEVICE)["current"]
    sys.setprofile(found.profile)
    try:
        yield found
    finally:
        sys.setprofile(previous)
    if found.started:
        found.bytes = memory.get_memory_info(_DEVICE)["peak"] - before


def program(step: Any, args: Sequence[Any], variant: str) -> Record:
    """The matmuls of `step` (a `tf.function`, `block.program`'s) on `args`, as the program of
    `variant` holds them: `function`, its traced graph's `MatMul` ops split where
    `imperative_grad` is called; `xla`, its optimized HLO's `dot` ops, both passes at once."""
    if variant == "xla":
        dots = hlo_dot_count(step.experimental_get_compiler_ir(*args)(stage="optimized_hlo"))
        method = "dot ops of the optimized HLO (experimental_get_compiler_ir)"
        one = NotObservable("XLA compiles both passes into one program")
        return Record(
            f"{variant} program: {method}",
            {"matmuls": method},
            forward_matmuls=one,
            backward_matmuls=one,
            matmuls=dots,
        )
    with _boundary() as marks:
        graph = step.get_concrete_function(*args).graph
    ops = graph.get_operations()
    cut = marks.get(graph, len(ops))
    method = "MatMul ops of the traced tf.function graph, before / after imperative_grad"
    return Record(
        f"{variant} program: {method}",
        {"forward_matmuls": method, "backward_matmuls": method},
        forward_matmuls=_matmuls(ops[:cut]),
        backward_matmuls=_matmuls(ops[cut:]),
    )


@contextlib.contextmanager
def _boundary() -> Iterator[dict]:
    """A profiler noting, per graph being built, its op count when `imperative_grad` is first
    called: TensorFlow creates the forward ops first and the backward ops after them."""
    marks: dict = {}

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        if frame.f_code is _GRADIENT_CODE and event == "call":
            graph = tf.compat.v1.get_default_graph()
            marks.setdefault(graph, len(graph.get_operations()))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield marks
    finally:
        sys.setprofile(previous)


# -- the traced graph (the stack's `record`) ----------------------------------------------


class RecordedOps:
    """An op callback: counts, by type, the ops a `GradientTape` will record."""

    def __init__(self):
        self.counts: Counter = Counter()

    def __call__(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if inputs and tape_record.should_record_backprop(list(inputs)):
            self.counts[_name(op_type)] += 1
        return None

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

    **Arguments:** `forward`, the function measured (float32 tensors shaped as `args` -> one
    tensor); `args` and `cotangent`, examples (only shapes are used); `origins`, per argument
    `"input"` or `"parameter"`; `variables`, `tf.Variable`s `forward` reads whose gradients
    are taken too (every variable the graph reads is a parameter).
    """
    specs = [tf.TensorSpec(np.shape(a), tf.float32) for a in (*args, cotangent)]
    ops, marks = RecordedOps(), {}

    def step(*tensors):
        *inputs, ct = tensors
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            y = forward(*inputs)
        marks["output"] = y
        marks["cut"] = len(tf.compat.v1.get_default_graph().get_operations())
        op_callbacks.add_op_callback(ops)
        try:
            return tape.gradient(
                y, [*inputs, *variables], output_gradients=ct,
                unconnected_gradients=tf.UnconnectedGradients.ZERO,
            )  # fmt: skip
        finally:
            op_callbacks.remove_op_callback(ops)

    concrete = tf.function(step, autograph=False).get_concrete_function(*specs)
    graph = concrete.graph
    all_ops, cut = graph.get_operations(), marks["cut"]
    return BackwardRecord(
        instrument=TRACED,
        saved=_saved(graph, cut, origins, concrete.variables),
        recomputed=ops.recomputed(),
        checkpoint_regions=_regions(all_ops[:cut], marks["output"]),
        backward_matmuls=_matmuls(all_ops[cut:]),
        forward_matmuls=_matmuls(all_ops[:cut]),
    )


def _matmuls(ops) -> int:
    return sum(op.type in MATMULS for op in ops)


def _saved(graph, cut: int, origins: Sequence[str], variables) -> tuple[SavedTensor, ...]:
    all_ops = graph.get_operations()
    forward_ops = {op.name for op in all_ops[:cut]}
    arguments = {t.ref(): i for i, t in enumerate(graph.inputs[: len(origins)])}
    cotangent = graph.inputs[len(origins)]
    handles = {internal.ref(): v for external, internal in graph.captures
               for v in variables if external is v.handle}  # fmt: skip
    from_input = _Depends(lambda t: origins[arguments[t.ref()]] == "input", arguments)
    from_anything = _Depends(lambda t: True, arguments, handles)

    saved, seen = [], set()
    for op in all_ops[cut:]:
        for t in op.inputs:
            if t.op.name not in forward_ops or t.ref() in seen or t is cotangent:
                continue
            seen.add(t.ref())
            shape, dtype = tuple(t.shape.as_list()), t.dtype.name
            source = _layout_source(t) if from_input(t) or t.ref() in arguments else None
            if source is not None and source.ref() in arguments:
                index = arguments[source.ref()]
                note = f"argument {index}" + (
                    "" if source is t else f", as {t.op.type} {t.op.name}"
                )
                role = "x" if origins[index] == "input" else ""
                saved.append(SavedTensor(shape, dtype, origins[index], note, role=role))
            elif t.ref() in handles:
                variable = handles[t.ref()]
                note = f"variable {variable.name} (its handle: read again in backward)"
                shape, dtype = tuple(variable.shape.as_list()), variable.dtype.name
                saved.append(SavedTensor(shape, dtype, "parameter", note))
            elif from_input(t):
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
        op = tensor.op
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


def _role(tensor, from_input, arguments: dict, origins: Sequence[str]) -> str:
    """Which of the MLP's tensors (x, d1, h, a, y) a forward tensor is, following its
    producers back to x; "" for anything else."""
    if tensor.ref() in arguments:
        return "x" if origins[arguments[tensor.ref()]] == "input" else ""
    op = tensor.op
    inputs = [t for t in op.inputs if from_input(t)]
    if op.type in LAYOUT_OPS and inputs:
        return _role(inputs[0], from_input, arguments, origins)
    if len(inputs) != 1:
        return ""
    before = _role(inputs[0], from_input, arguments, origins)
    if op.type == "Relu":
        return "a" if before == "h" else ""
    return role_after(_STEPS.get(op.type, ""), [before])


def _note(tensor) -> str:
    return f"output of {tensor.op.type} {tensor.op.name}"


def _regions(forward_ops, output) -> int:
    """Custom-gradient ops among the output's ancestors in the forward pass."""
    custom = {op.name for op in forward_ops if "_gradient_op_type" in op.node_def.attr}
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


# -- shared -------------------------------------------------------------------------------


def _equal(values: np.ndarray, other: np.ndarray) -> bool:
    return values.size == other.size and bool(np.array_equal(values, other))
