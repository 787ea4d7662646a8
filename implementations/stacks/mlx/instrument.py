"""MLX's instrument for what a backward pass keeps and recomputes: the lazy graph of `mx.vjp`.

MLX is lazy. `mx.vjp(fn, primals, cotangents)` returns the output and the
gradients unevaluated, and the graph behind them is the whole computation,
forward and backward. `mx.export_to_dot` writes that graph: array nodes
(named where the caller names them, lettered otherwise; evaluated arrays are
sources) and primitive nodes (the operation's name), with edges in argument
order. It holds no shapes, dtypes or operation parameters, so arrays whose
shape a record reports must be named: the arguments, and what a model notes
with a `Tap`.

- **Forward**: the ancestors of the output. **Backward**: the ancestors of
  the gradients that are not forward.
- **Saved**: forward arrays that a backward primitive reads. The graph holds
  them until that primitive runs, so they stay alive between the passes: it
  is what the backward pass keeps. `mx.checkpoint` makes its recomputation
  `depends` on the region's outputs, so that it runs after the forward pass;
  `Depends` reads those extra inputs for ordering, not data (its outputs are
  its first inputs), and they are not counted. They are the region's outputs:
  the caller holds the last, and each other is the next region's input.
- **Origin**: looking back through operations that only move or relabel data
  (`Copy`, `ExpandDims`, ...), an argument is the input or a parameter, as
  the caller says; any other array computed from x is an activation, from
  parameters alone a parameter, from neither a constant.
- **Recomputed**: backward primitives off the cotangent's path that compute
  again what a forward primitive computed: the same operation on the same
  values, matched by structure (pass-through operations and `Depends` seen
  through; a named source is itself, and every unnamed one, a constant such as
  relu's 0, is one value, since the export has no values).
  Operations the backward needs for itself (relu's mask, `Greater`) match no
  forward operation and are not counted. Data movement is left out.
- **Matmuls**: `Matmul` and `AddMM` primitives (`nn.Linear` fuses its bias into `AddMM`),
  forward and backward apart.
- **Regions**: `CustomTransforms` primitives (what `mx.checkpoint` builds)
  whose outputs a backward `Depends` waits on: the checkpoint's signature. A nested region's
  inner one is the outer's rerun, in the backward graph: it counts too.

Imports mlx only.
"""

from __future__ import annotations

import gc
import io
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx

from ...contract import BackwardRecord, SavedTensor
from ...measuring.record import MATMULS as BLOCK_MATMULS
from ...measuring.record import Evaluation, NotObservable, Record

INSTRUMENT = (
    "mx.export_to_dot of the mx.vjp graph: forward arrays that backward primitives read; "
    "forward ops redone off the cotangent path; CustomTransforms with a Depends on its outputs"
)

# Operations that hand their (first) input on as it is, or as a view of it.
PASS_THROUGH = frozenset({"Copy", "StopGradient"})
VIEWS = frozenset({"ExpandDims", "Squeeze", "Reshape", "Transpose", "Broadcast", "Flatten"})
# The matmuls: nn.Linear runs AddMM (the bias fused), a gradient Matmul.
MATMULS = frozenset({"Matmul", "AddMM"})
# Left out of the recomputed count: moving data is not recomputing it.
LAYOUT = PASS_THROUGH | VIEWS | frozenset({"AsType", "Depends"})

_SOURCE = re.compile(r'^\{ rank=source; "([^"]+)"; \}$')
_PRIMITIVE = re.compile(r'^\{ (\d+) \[label ="([^"]+)", shape=rectangle\]; \}$')
_INPUT = re.compile(r'^"([^"]+)" -> (\d+)$')
_OUTPUT = re.compile(r'^(\d+) -> "([^"]+)"$')


class Tap:
    """Names for the arrays a model makes, so that records can give their shapes.

    Call it as `tap("fc1", array)`: it returns the array and keeps it under
    that name (`fc1#2` the second time, when a checkpoint reruns the model).
    """

    def __init__(self):
        self.arrays: dict[str, mx.array] = {}

    def __call__(self, name: str, array: mx.array) -> mx.array:
        key, number = name, 2
        while key in self.arrays:
            key, number = f"{name}#{number}", number + 1
        self.arrays[key] = array
        return array


def no_tap(name: str, array: mx.array) -> mx.array:
    """A `Tap` that keeps nothing (the default outside the instrument)."""
    return array


@dataclass
class Graph:
    """A parsed `mx.export_to_dot` graph: arrays by name, primitives by id, in export order
    (the export walks depth first, inputs before their users: a topological order)."""

    sources: set[str] = field(default_factory=set)
    label: dict[str, str] = field(default_factory=dict)  # primitive -> operation name
    inputs: dict[str, list[str]] = field(default_factory=dict)  # primitive -> arrays, in order
    outputs: dict[str, list[str]] = field(default_factory=dict)  # primitive -> arrays, in order
    producer: dict[str, str] = field(default_factory=dict)  # array -> primitive

    @classmethod
    def parse(cls, text: str) -> Graph:
        graph = cls()
        for line in text.splitlines():
            line = line.strip()
            if found := _SOURCE.match(line):
                graph.sources.add(found.group(1))
            elif found := _PRIMITIVE.match(line):
                graph.label[found.group(1)] = found.group(2)
                graph.inputs.setdefault(found.group(1), [])
                graph.outputs.setdefault(found.group(1), [])
            elif found := _INPUT.match(line):
                graph.inputs[found.group(2)].append(found.group(1))
            elif found := _OUTPUT.match(line):
                graph.outputs[found.group(1)].append(found.group(2))
                graph.producer[found.group(2)] = found.group(1)
        return graph

    @classmethod
    def export(cls, outputs: Sequence[mx.array], names: Mapping[str, mx.array]) -> Graph:
        """The graph behind `outputs`, arrays in `names` called by their names."""
        text = io.StringIO()
        mx.export_to_dot(text, *outputs, **names)
        return cls.parse(text.getvalue())

    def ancestors(self, arrays: Sequence[str]) -> set[str]:
        """The arrays, and every array they are computed from."""
        seen, stack = set(), list(arrays)
        while stack:
            array = stack.pop()
            if array in seen:
                continue
            seen.add(array)
            if array in self.producer:
                stack.extend(self.inputs[self.producer[array]])
        return seen

    def depends_on(self, flagged: set[str]) -> set[str]:
        """The arrays computed from any flagged array, the flagged ones included."""
        found = set(flagged)
        for primitive, inputs in self.inputs.items():  # topological order
            if any(a in found for a in inputs):
                found.update(self.outputs[primitive])
        return found

    def passed_from(self, array: str) -> str | None:
        """The array that `array` hands on as it is (a copy, a view, a `Depends` output), or
        None."""
        primitive = self.producer.get(array)
        if primitive is None:
            return None
        label = self.label[primitive]
        if label == "Depends":  # output k is input k
            return self.inputs[primitive][self.outputs[primitive].index(array)]
        if label in PASS_THROUGH or label in VIEWS:
            return self.inputs[primitive][0]
        return None

    def chain(self, array: str) -> list[str]:
        """`array`, then each array it was handed on from (`passed_from`), back to the first
        that was computed (or is a source)."""
        chain = [array]
        while (previous := self.passed_from(chain[-1])) is not None:
            chain.append(previous)
        return chain

    def keys(self, named: set[str]) -> dict[str, int]:
        """A structural key per array: equal keys mean the same operations on the same values.

        Each distinct (operation, operand keys, output index) gets the next
        integer, so a key is flat. Nested tuples would be equal just as well,
        but a tuple does not keep its hash: hashing one walks its whole
        ancestry as a tree, which doubles at every array used twice (an
        L-block stack's graph, L = 32, never finished).
        """
        ids: dict[tuple, int] = {}

        def intern(structure: tuple) -> int:
            return ids.setdefault(structure, len(ids))

        key: dict[str, int] = {
            a: intern(("source", a) if a in named else ("constant",)) for a in self.sources
        }
        for primitive, inputs in self.inputs.items():
            label, outputs = self.label[primitive], self.outputs[primitive]
            if label in PASS_THROUGH:
                key[outputs[0]] = key[inputs[0]]
            elif label == "Depends":
                for k, out in enumerate(outputs):
                    key[out] = key[inputs[k]]
            else:
                operands = tuple(key[a] for a in inputs)
                for k, out in enumerate(outputs):
                    key[out] = intern((label, operands, k))
        return key


#: The roles of the arrays a tap names: the port's (`mlx.py`: AddMM fuses the first layer's
#: matmul and bias, so its output is h, there is no d1 to save) and the watch's (`watch`).
_ROLES_BY_NAME = {"fc1": "h", "relu": "a", "fc2": "y", "output": "y", "h": "h", "a": "a", "y": "y"}
#: Where MLX keeps every array: its unified memory, the device's; there is no other to offload to.
SPACE = "device"
#: The most arrays `mx.export_to_dot` can name: it takes them as keyword arguments, and
#: nanobind's vectorcall refuses more than 1024 (deep nestings at L = 64 name more).
NAMED_LIMIT = 1024
METHODS = {
    "saved": "forward arrays that backward primitives read in mx.export_to_dot of the mx.vjp graph",
    "evaluations": "AddMM primitives per block (by their weight) the output needs (forward) and "
    "the gradients need beyond them (reruns); a rerun's a @ W2 no gradient reads is not in "
    "the graph: skipped",
    "forward_matmuls": "AddMM and Matmul primitives the output needs",
    "backward_matmuls": "AddMM and Matmul primitives the gradients need beyond the output's",
    "recomputed": "backward primitives off the cotangent's path that redo a forward primitive",
    "regions": "CustomTransforms primitives (mx.checkpoint's) the output needs",
    "reruns": "CustomTransforms primitives whose outputs a backward Depends waits on",
}


def backward_record(
    fn: Callable[..., mx.array],
    args: Mapping[str, mx.array],
    origins: Mapping[str, str],
    cotangent: mx.array,
    tap: Tap | None = None,
) -> BackwardRecord:
    """Read what `mx.vjp(fn, args, [cotangent])` keeps and recomputes off its graph.

    **Arguments:**

    - `fn`: `fn(*args.values()) -> array`, the function differentiated.
    - `args`: its arguments by name (names without quotes).
    - `origins`: for each name, `"input"` (arrays computed from it are
      activations) or `"parameter"`.
    - `cotangent`: pulled back through `fn`.
    - `tap`: the `Tap` that `fn`'s model notes its arrays in, for their shapes.

    Nothing is evaluated: the record is read off the unevaluated graph.
    """
    arrays = list(args.values())
    mx.eval(arrays, cotangent)  # sources in the graph, so that their names stick
    outputs, grads = mx.vjp(lambda *a: [fn(*a)], arrays, [cotangent])
    return read(outputs[0], grads, args, origins, cotangent, tap).backward_record()


def read(
    output: mx.array,
    grads: Sequence[mx.array],
    args: Mapping[str, mx.array],
    origins: Mapping[str, str],
    cotangent: mx.array,
    tap: Tap | None = None,
    kernels: Mapping[str, tuple[int, str]] | None = None,
) -> Record:
    """What an `mx.vjp` already made keeps and recomputes, read off its unevaluated graph, as a
    `Record`: `output` and `grads` (one per argument of `args`, in order) as it returned them,
    `args` and `cotangent` evaluated before it ran (see `backward_record`). `kernels` (argument
    name -> `(block, matmul)`, the block's weights) tells the block evaluations apart, which
    are not observed without it."""
    names = dict(tap.arrays) if tap is not None else {}
    names |= {"output": output}
    names |= {f"grad {name}": g for name, g in zip(args, grads, strict=True)}
    names |= dict(args) | {"cotangent": cotangent}  # last: their names win a clash
    if len(names) > NAMED_LIMIT:  # export_to_dot takes names as keyword arguments
        unseen = NotObservable(
            f"mx.export_to_dot names at most {NAMED_LIMIT} arrays (nanobind's limit on keyword "
            f"arguments); this graph has {len(names)} to name"
        )
        return Record(INSTRUMENT, {}, **dict.fromkeys(METHODS, unseen))
    graph = Graph.export([output, *grads], names)
    known = {name: (tuple(a.shape), str(a.dtype).rsplit(".", 1)[-1]) for name, a in names.items()}

    forward = graph.ancestors(["output"])
    backward = graph.ancestors([f"grad {name}" for name in args]) - forward
    saved, ordering = _read_by_backward(graph, forward, backward)
    from_input = graph.depends_on({n for n, o in origins.items() if o == "input"})
    from_any = graph.depends_on(set(origins))
    records = []
    for array in saved:
        chain = graph.chain(array)
        root = chain[-1]
        path = [graph.label[graph.producer[a]] for a in chain[:-1]]
        through = f" (through {', '.join(path)})" if path else ""
        named = _named(graph, chain, known)
        if root in origins:
            origin, note = origins[root], f"argument {root}{through}"
        else:
            origin = (
                "activation"
                if array in from_input
                else "parameter"
                if array in from_any
                else "constant"
            )
            producer = graph.producer.get(root)
            made = f"output of {graph.label[producer]}" if producer else "an evaluated array"
            note = f"{made}{through}" + (f", named {named!r}" if named else "")
        if named is None:  # a view has its source's bytes: the nearest named shape stands
            shape, dtype = (), "float32"
            note += "; shape unknown (unnamed in the export)"
        else:
            shape, dtype = known[named]
        role = _ROLES_BY_NAME.get(named.split("#")[0], "") if named else ""
        role = "x" if origin == "input" else role if origin == "activation" else ""
        records.append(SavedTensor(shape, dtype, origin, note, role, SPACE))

    off_path = graph.depends_on({"cotangent"})
    key = graph.keys(set(known))
    computed = {key[a] for a in forward if a in graph.producer}
    recomputed: Counter = Counter()
    for primitive in dict.fromkeys(graph.producer[a] for a in backward if a in graph.producer):
        label, first = graph.label[primitive], graph.outputs[primitive][0]
        if label in LAYOUT or first in off_path or key[first] not in computed:
            continue
        recomputed[label] += 1
    # A nested region's inner checkpoint is entered when the outer one reruns it, in backward.
    reruns = sum(
        1
        for primitive in _made(graph, forward | backward)
        if graph.label[primitive] == "CustomTransforms"
        and any(out in ordering for out in graph.outputs[primitive])
    )
    regions = sum(graph.label[p] == "CustomTransforms" for p in _made(graph, forward))
    evaluations: Any = NotObservable("no block weights named: the block evaluations are not told")
    if kernels is not None:
        evaluations = _evaluations(graph, forward, "forward", kernels)
        evaluations += _evaluations(graph, backward, "backward", kernels)
    return Record(
        INSTRUMENT,
        METHODS,
        saved=tuple(records),
        evaluations=evaluations,
        forward_matmuls=_matmuls(graph, forward),
        backward_matmuls=_matmuls(graph, backward),
        recomputed=dict(recomputed),
        regions=regions,
        reruns=reruns,
    )


def _named(graph: Graph, chain: list[str], known: Mapping[str, Any]) -> str | None:
    """The first named array of `chain`, else, where it starts at an output of a region
    (`CustomTransforms`: its last inputs are its outputs, through a `StopGradient`), the named
    array that output hands on: the shape the export lacks."""
    found = next((a for a in chain if a in known), None)
    primitive = graph.producer.get(chain[-1])
    if found is not None or primitive is None or graph.label[primitive] != "CustomTransforms":
        return found
    inputs, outputs = graph.inputs[primitive], graph.outputs[primitive]
    inner = inputs[len(inputs) - len(outputs) + outputs.index(chain[-1])]
    return _named(graph, graph.chain(inner), known)


def _made(graph: Graph, arrays: set[str]) -> dict[str, None]:
    """The primitives that make `arrays`, each once, in export order."""
    return dict.fromkeys(graph.producer[a] for a in arrays if a in graph.producer)


def _evaluations(
    graph: Graph, arrays: set[str], phase: str, kernels: Mapping[str, tuple[int, str]]
) -> tuple[Evaluation, ...]:
    """The block evaluations of one phase: per block, one for each AddMM on its W1; the
    first as many as its AddMMs on W2 ran both, the rest x @ W1 alone (a @ W2 needs x @ W1)."""
    ran: Counter = Counter()
    for primitive in _made(graph, arrays):
        if graph.label[primitive] == "AddMM":
            weight = graph.chain(graph.inputs[primitive][1])[-1]  # AddMM reads (a, b, c)
            if weight in kernels:
                ran[kernels[weight]] += 1
    found = []
    for block in sorted({b for b, _ in ran}):
        both = ran[block, BLOCK_MATMULS[1]]
        for n in range(ran[block, BLOCK_MATMULS[0]]):
            found.append(Evaluation(block, phase, BLOCK_MATMULS if n < both else BLOCK_MATMULS[:1]))
    return tuple(found)


def _matmuls(graph: Graph, arrays: set[str]) -> int:
    """The matmul primitives that make `arrays` (each primitive once)."""
    return sum(graph.label[primitive] in MATMULS for primitive in _made(graph, arrays))


def _read_by_backward(graph: Graph, forward: set[str], backward: set[str]):
    """Forward arrays that backward primitives read as data (in export order), and the arrays
    (forward, or rerun in backward) a backward `Depends` waits on for ordering only."""
    saved, ordering = {}, set()
    for primitive, inputs in graph.inputs.items():
        if not any(out in backward for out in graph.outputs[primitive]):
            continue
        data = len(graph.outputs[primitive]) if graph.label[primitive] == "Depends" else None
        for index, array in enumerate(inputs):
            if data is not None and index >= data:
                ordering.add(array)  # a region's outputs, forward or rerun in backward
            elif array in forward:
                saved.setdefault(array, None)
    return list(saved), ordering


# -- the watch and the peak around the very call (the bench's block through `block.vjp`) --


class Watch:
    """The graph of the first `mx.vjp` called in `watch`'s block, read as it returns, before
    anything evaluates it. `x` and `parameters` (four per block, w1 b1 w2 b2) are the call's
    arrays, known by identity; `mx.addmm` and `mx.maximum` name what they make (h, a, y), the
    shapes the export lacks."""

    def __init__(self, x: mx.array, parameters: Sequence[mx.array]):
        self.x, self.parameters = x, list(parameters)
        self.tap, self.relu_outputs = Tap(), set()
        self.found: Record | None = None

    def _name(self, array: mx.array) -> str:
        if array is self.x:
            return "x"
        index = next(i for i, p in enumerate(self.parameters) if p is array)
        return f"{('w1', 'b1', 'w2', 'b2')[index % 4]}_{index // 4}"

    def vjp(self, original: Callable, fun: Callable, primals: list, cotangents: list) -> Any:
        outputs, grads = original(fun, primals, cotangents)
        if self.found is None:
            args = {self._name(p): p for p in primals}
            self.tap("x", self.x)  # x held fixed (the gradient of the parameters) is no primal
            origins = dict.fromkeys(args, "parameter") | {"x": "input"}
            blocks = range(len(self.parameters) // 4)
            kernels = {f"w{m + 1}_{b}": (b, BLOCK_MATMULS[m]) for b in blocks for m in (0, 1)}
            self.found = read(outputs[0], grads, args, origins, cotangents[0], self.tap, kernels)
        return outputs, grads

    def addmm(self, original: Callable, c: mx.array, a: mx.array, b: mx.array, **kw: Any) -> Any:
        return self.tap("y" if id(a) in self.relu_outputs else "h", original(c, a, b, **kw))

    def maximum(self, original: Callable, *args: Any, **kw: Any) -> Any:
        out = self.tap("a", original(*args, **kw))
        self.relu_outputs.add(id(out))  # the tap holds it: the id stays its own
        return out

    def record(self) -> Record:
        if self.found is None:
            return Record(INSTRUMENT, {}, **dict.fromkeys(METHODS, _NO_VJP))
        return self.found


_NO_VJP = NotObservable("the call ran no mx.vjp")


@contextmanager
def _patched(**wrappers: Callable) -> Iterator[None]:
    """`mlx.core`'s functions replaced by `wrapper(original, *args)` in the `with` block."""
    originals = {name: getattr(mx, name) for name in wrappers}
    for name, wrapper in wrappers.items():
        setattr(mx, name, lambda *a, _w=wrapper, _o=originals[name], **k: _w(_o, *a, **k))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(mx, name, original)


@contextmanager
def watch(x: mx.array, parameters: Sequence[mx.array]) -> Iterator[Watch]:
    """The graph of the `mx.vjp` in the `with` block, read before it is evaluated; `.record()`
    after it."""
    seen = Watch(x, parameters)
    with _patched(vjp=seen.vjp, addmm=seen.addmm, maximum=seen.maximum):
        yield seen


PEAK = (
    "MLX's allocator: mx.get_peak_memory() from the first mx.eval of an mx.vjp's gradient (its "
    "peak reset there), above mx.get_active_memory() before the call"
)


#: Why `split_peak` leaves MLX's peak whole (measured at L = 4, B = 64, F = 16, three runs each:
#: every's peak 16.0 to 24.1 units, peak(2B) - peak(B) 7.9 to 16.0, segments(2)'s fixed part
#: down to -69,128 bytes): its evaluation is asynchronous, so the peak is not linear in B.
PEAK_NOT_SPLIT = (
    "MLX evaluates on an asynchronous stream, buffers freed as its tasks finish, so its peak "
    "varies from run to run and is not linear in the batch: peak(2B) - peak(B) does not split it"
)


class Peak:
    """MLX's peak over the backward pass of the call in `peak()`'s block: from the first
    `mx.eval` that evaluates a gradient of an `mx.vjp` made in it (the forward pass is the
    output's evaluation before it)."""

    def __init__(self):
        self.gradients: list[mx.array] = []
        self.started, self.bytes = False, None

    def vjp(self, original: Callable, *args: Any, **kw: Any) -> Any:
        outputs, grads = original(*args, **kw)
        self.gradients.extend(grads)
        return outputs, grads

    def eval(self, original: Callable, *args: Any) -> Any:
        if not self.started and any(a is g for a in _arrays(args) for g in self.gradients):
            mx.synchronize()
            mx.reset_peak_memory()
            self.started = True
        return original(*args)

    def record(self) -> Record:
        if self.bytes is None:
            reason = "the call evaluated no gradient of an mx.vjp"
            return Record(PEAK, {}, peak_bytes=NotObservable(reason))
        return Record(PEAK, {"peak_bytes": PEAK}, peak_bytes=self.bytes)


@contextmanager
def peak() -> Iterator[Peak]:
    """MLX's allocator around the call in the `with` block (`Peak`); `.record()` after it."""
    found = Peak()
    gc.collect()
    mx.synchronize()
    before = mx.get_active_memory()
    with _patched(vjp=found.vjp, eval=found.eval):
        yield found
    mx.synchronize()
    if found.started:
        found.bytes = mx.get_peak_memory() - before
    found.gradients.clear()


def _arrays(tree: Any) -> Iterator[Any]:
    """The leaves of `mx.eval`'s arguments (arrays, lists, tuples, dicts of them)."""
    for item in tree:
        if isinstance(item, (list, tuple)):
            yield from _arrays(item)
        elif isinstance(item, dict):
            yield from _arrays(list(item.values()))
        else:
            yield item
