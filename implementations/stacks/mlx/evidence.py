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

import io
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import mlx.core as mx

from ...contract import BackwardRecord, SavedTensor

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


#: The roles of the arrays a port's tap names (`implementations.stacks.mlx.mlx`): AddMM fuses the
#: first layer's matmul and bias, so its output is h (there is no d1 to save).
_ROLES_BY_NAME = {"fc1": "h", "relu": "a", "fc2": "y", "output": "y"}


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
    return read_vjp(outputs[0], grads, args, origins, cotangent, tap)


def read_vjp(
    output: mx.array,
    grads: Sequence[mx.array],
    args: Mapping[str, mx.array],
    origins: Mapping[str, str],
    cotangent: mx.array,
    tap: Tap | None = None,
) -> BackwardRecord:
    """Read what an `mx.vjp` already made keeps and recomputes off its unevaluated graph:
    `output` and `grads` (one per argument of `args`, in order) as it returned them, `args`
    and `cotangent` evaluated before it ran (see `backward_record` for the rest)."""
    names = dict(tap.arrays) if tap is not None else {}
    names |= {"output": output}
    names |= {f"grad {name}": g for name, g in zip(args, grads, strict=True)}
    names |= dict(args) | {"cotangent": cotangent}  # last: their names win a clash
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
        named = next((a for a in chain if a in known), None)
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
        role = _ROLES_BY_NAME.get(named, "") if origin == "activation" else ""
        if origin == "input":
            role = "x"
        records.append(SavedTensor(shape, dtype, origin, note, role=role))

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
    regions = sum(
        1
        for primitive in dict.fromkeys(
            graph.producer[a] for a in forward | backward if a in graph.producer
        )
        if graph.label[primitive] == "CustomTransforms"
        and any(out in ordering for out in graph.outputs[primitive])
    )
    return BackwardRecord(
        INSTRUMENT,
        tuple(records),
        dict(recomputed),
        regions,
        backward_matmuls=_matmuls(graph, backward),
        forward_matmuls=_matmuls(graph, forward),
    )


def _matmuls(graph: Graph, arrays: set[str]) -> int:
    """The matmul primitives that make `arrays` (each primitive once)."""
    made = dict.fromkeys(graph.producer[a] for a in arrays if a in graph.producer)
    return sum(graph.label[primitive] in MATMULS for primitive in made)


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
