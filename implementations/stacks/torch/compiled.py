"""`torch.compile` through inductor, with AOTAutograd's partitioned graphs kept as evidence.

Imports torch only (inductor is part of it; on Linux it needs a C++ compiler).

**The backend.** `Recorder.backend` is inductor itself, `compile_fx`, with
one difference: its `inner_compile` hook, the function inductor hands each
graph that AOTAutograd has traced and partitioned, first notes the graph and
then calls inductor's own `compile_fx_inner`. So the partitioner (min-cut), the
joint-graph passes and the generated kernels are inductor's, and the graphs
noted are exactly the ones it compiled. The decompositions are inductor's
too, less two: its rewrites of small matrix-vector products
(`decompositions`). The
callable it returns notes which compiled graph each call ran, so a record
always describes the partition that the call itself used.

AOTAutograd's on-disk cache (`enable_autograd_cache`) is turned off for
these compiles: on a hit it returns inductor's kernels without tracing or
partitioning again, so no graph would reach the hook. Inductor's own cache
(the FX graph cache: generated C++, compiled) stays on; it holds the costly
part.

**Reading a partition** (`Partition.record`):

- **saved**: what the forward graph returns for the backward graph, which
  are the backward graph's inputs other than the cotangents (`tangents_*`).
  Each is classified by what it is computed from: the input x, parameters
  alone, or nothing (a constant; a size, under dynamic shapes). A view
  (or reshape) of a saved tensor holds the same storage: it counts once.
- **recomputed**: forward operations that the backward graph runs again.
  The partitioner copies each recomputed node of the joint graph into the
  backward graph under its joint-graph name, so a backward node that bears
  the name of a forward node is a recomputation. View operators are left
  out (they move no data), as in the eager instrument.
- **roles** (x, d1, h, a, mask, y): read off the forward graph's chain
  (`graph_roles`): before relu, a bare matmul's output is d1 and what has
  a bias in it (or went through the `tag` operator) h; relu's output is a,
  a boolean relu's mask, and what follows relu the second layer, y.
- **backward matmuls**: the matmul operators of the backward graph
  (`aten.mm`, `aten.addmm`, ...): the port compiles without inductor's
  matrix-vector rewrites (`decompositions`), so every product stays one.
- **checkpoint regions**: `torch.utils.checkpoint` under `torch.compile`
  becomes the higher-order op `tag_activation_checkpoint`; AOTAutograd tags
  every node it traced from it with the region's `ac_graph_id` and a
  recompute policy, and the partitioner honours the tags. The regions are
  the distinct ids in the forward graph.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._dynamo import config as dynamo_config
from torch._functorch import config as functorch_config
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch.utils.checkpoint import CheckpointPolicy

with warnings.catch_warnings():
    # Importing inductor imports torch.utils.mkldnn, whose TorchScript classes
    # warn that torch.jit.script_method is deprecated: torch's own noise.
    warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    from torch._inductor.custom_graph_pass import CustomPartitionerFn
    from torch._inductor.decomposition import select_decomp_table

from ...contract import BackwardRecord, SavedTensor
from ...policies import SAVED_NAME
from .caches import RECOMPILES, keep_headers_in_cache_directory
from .policies import MATMUL_NAMES, TAG

keep_headers_in_cache_directory()

INSTRUMENT = "AOTAutograd's partitioned forward and backward graphs, as inductor compiled them"

# A node whose output aliases its first input's storage (plus reshape, which
# does on the contiguous tensors here): it moves no data.
ALIASES = frozenset({"aten.view", "aten.reshape", "aten._unsafe_view", "aten.alias"})


@dataclass(frozen=True)
class Node:
    """One node of a graph, as much of it as a record needs.

    `shape` holds ints and, under dynamic shapes, sympy expressions in the
    graph's size symbols; it is None for a non-tensor (a size).
    """

    name: str
    op: str  # "placeholder", "call_function", "output", ...
    target: str  # the operator, e.g. "aten.addmm"; "" for placeholders and outputs
    view: bool
    inputs: tuple[str, ...]
    shape: tuple[Any, ...] | None
    dtype: str
    region: Any = None  # the checkpoint region's ac_graph_id, if any
    size: Any = None  # a size input's symbol (sympy), under dynamic shapes


@dataclass(frozen=True)
class Graph:
    """A graph as inductor received it: its nodes, its outputs (names; None for no tensor), code."""

    nodes: tuple[Node, ...]
    outputs: tuple[str | None, ...]
    code: str

    @classmethod
    def of(cls, graph_module: torch.fx.GraphModule) -> Graph:
        # Read now: inductor's post-grad passes rewrite the module in place.
        nodes, outputs = [], ()
        for node in graph_module.graph.nodes:
            if node.op == "output":
                outputs = tuple(getattr(arg, "name", None) for arg in node.args[0])
                continue
            nodes.append(_node(node))
        return cls(tuple(nodes), outputs, graph_module.code.strip())

    def by_name(self) -> dict[str, Node]:
        return {node.name: node for node in self.nodes}

    @property
    def placeholders(self) -> list[Node]:
        return [node for node in self.nodes if node.op == "placeholder"]

    @property
    def compute(self) -> list[Node]:
        """The operator calls that compute tensors (views and size arithmetic left out)."""
        return [
            node
            for node in self.nodes
            if node.op == "call_function" and not node.view and node.shape is not None
        ]


def _node(node: torch.fx.Node) -> Node:
    target, view = "", False
    if node.op == "call_function":
        packet = getattr(node.target, "overloadpacket", None)
        target = str(packet) if packet is not None else getattr(node.target, "__name__", "?")
        view = target in ALIASES or bool(getattr(node.target, "is_view", False))
    value = node.meta.get("val")
    if isinstance(value, torch.Tensor):
        shape = tuple(_size(s) for s in value.shape)
        dtype = str(value.dtype).removeprefix("torch.")
    else:
        shape, dtype = None, type(value).__name__
    size = value.node.expr if isinstance(value, torch.SymInt) else None
    inputs = tuple(arg.name for arg in node.all_input_nodes)
    region = node.meta.get("ac_graph_id")
    return Node(node.name, node.op, target, view, inputs, shape, dtype, region, size)


def _size(size: Any) -> Any:
    return size.node.expr if isinstance(size, torch.SymInt) else int(size)


@dataclass
class Partition:
    """One compiled graph: the roles of its inputs, and the graphs inductor compiled for it.

    **Arguments:**

    - `roles`: per graph input, in order: `"input"` (x), `"parameter"`, or
      `"size"` (a size, under dynamic shapes).
    - `forward`, `backward`: the partitioned graphs (the backward arrives when
      AOTAutograd compiles it, which may be at the first backward pass).
    - `inference`: True when no input required grad: one graph, no partition.
    """

    roles: tuple[str, ...]
    forward: Graph | None = None
    backward: Graph | None = None
    inference: bool = False

    def note(self, graph_module: torch.fx.GraphModule, kwargs: dict[str, Any]) -> None:
        graph = Graph.of(graph_module)
        if kwargs.get("is_backward"):
            self.backward = graph
        else:
            self.forward = graph
            self.inference = bool(kwargs.get("is_inference"))

    @property
    def saved_names(self) -> list[str]:
        """The names of what the forward graph keeps for the backward graph, in order."""
        if self.forward is None or self.backward is None:
            raise RuntimeError("no partitioned backward graph: did the call run a backward pass?")
        names = [n.name for n in self.backward.placeholders if not n.name.startswith("tangents")]
        missing = set(names) - set(self.forward.outputs)
        if missing:  # the partition's contract: the backward reads the forward's outputs
            raise AssertionError(f"backward inputs the forward does not return: {sorted(missing)}")
        return names

    def recomputed(self) -> Counter:
        """Forward operators the backward graph runs again, by name, views left out."""
        forward = {n.name for n in self.forward.compute}
        return Counter(n.target for n in self.backward.compute if n.name in forward)

    def backward_matmuls(self) -> int:
        """The matmuls the backward graph runs (see the module docstring)."""
        return matmul_count(self.backward)

    def regions(self) -> int:
        """How many checkpoint regions AOTAutograd tagged in the forward graph."""
        return len({n.region for n in self.forward.nodes if n.region is not None})

    def record(self, args: Sequence[Any]) -> BackwardRecord:
        """The partition as a `BackwardRecord`, its sizes bound to those of the call's `args`."""
        nodes = self.forward.by_name()
        bindings = _bindings(self.forward.placeholders, args)
        origins = _origins(self.forward, self.roles)
        roles = graph_roles(self.forward, origins)
        shared: dict[str, list[str]] = {}  # a storage's node -> the saved names that hold it
        sizes = []
        for name in self.saved_names:
            node = nodes[name]
            if node.shape is None:  # under dynamic shapes, the backward needs sizes
                note = f"{name}: a size (SymInt), not a tensor"
                sizes.append(SavedTensor((), "int64", "constant", note))
            else:
                shared.setdefault(_base(node, nodes), []).append(name)
        saved = [
            SavedTensor(
                tuple(_concrete(size, bindings) for size in nodes[base].shape),
                nodes[base].dtype,
                origins[base],
                f"{', '.join(names)}: {_describe(nodes[base], origins[base])}",
                roles.get(base, ""),
                "device",  # one graph on one device: inductor moves nothing to the host here
            )
            for base, names in shared.items()
        ]
        return BackwardRecord(
            instrument=INSTRUMENT,
            saved=(*saved, *sizes),
            recomputed=dict(self.recomputed()),
            checkpoint_regions=self.regions(),
            backward_matmuls=self.backward_matmuls(),
            forward_matmuls=matmul_count(self.forward),
            # torch has no names: the `tag` operator on h stands for the one name.
            tags=(SAVED_NAME,) if any(n.target == _TAG for n in self.forward.nodes) else (),
        )


_TAG = str(TAG.overloadpacket)
# Operators that bring the bias in (or tag h): what follows them before relu is h.
_BIASED = frozenset({"aten.addmm", "aten.addmv", "aten.add", _TAG})


def graph_roles(graph: Graph, origins: dict[str, str]) -> dict[str, str]:
    """The role of each activation of a forward graph (x, d1, h, a, mask, y); see the module
    docstring. Nodes that are not activations (parameters, constants) have none."""
    nodes = graph.by_name()
    roles: dict[str, str] = {}
    after_relu: set[str] = set()  # relu and what depends on it
    biased: set[str] = set()  # before relu, what has the bias (or the tag) in it
    for node in graph.nodes:
        if node.op == "placeholder":
            if origins[node.name] == "input":
                roles[node.name] = "x"
            continue
        if any(name in after_relu for name in node.inputs) or node.target == "aten.relu":
            after_relu.add(node.name)
        elif node.target in _BIASED or any(name in biased for name in node.inputs):
            biased.add(node.name)
        if origins.get(node.name) != "activation":
            continue
        base = _base(node, nodes)
        if base != node.name:
            roles[node.name] = roles.get(base, "")
        elif node.dtype == "bool":
            roles[node.name] = "mask"
        elif node.target == "aten.relu":
            roles[node.name] = "a"
        elif node.name in after_relu:
            roles[node.name] = "y"
        else:
            roles[node.name] = "h" if node.name in biased else "d1"
    return roles


def matmul_count(graph: Graph) -> int:
    """The matmuls a graph runs: its matmul operator nodes."""
    return sum(node.target in MATMUL_NAMES for node in graph.compute)


def _base(node: Node, nodes: dict[str, Node]) -> str:
    """The name of the node whose storage `node` shares (itself unless it is a view)."""
    while node.view and node.inputs:
        node = nodes[node.inputs[0]]
    return node.name


def _origins(graph: Graph, roles: Sequence[str]) -> dict[str, str]:
    """Each node's origin: "input", "parameter", "activation" (from x) or "constant"."""
    placeholders = graph.placeholders
    if len(placeholders) != len(roles):
        raise AssertionError(f"{len(placeholders)} graph inputs for {len(roles)} roles")
    depends: dict[str, set[str]] = {}
    origins: dict[str, str] = {}
    for node, role in zip(placeholders, roles, strict=True):
        depends[node.name] = {role}
        origins[node.name] = "constant" if role == "size" else role
    nodes = graph.by_name()
    for node in graph.nodes:
        if node.op == "placeholder":
            continue
        depends[node.name] = set().union(*(depends[name] for name in node.inputs))
        base = _base(node, nodes)
        if base != node.name:  # a view holds its base's data
            origins[node.name] = origins[base]
        elif "input" in depends[node.name]:
            origins[node.name] = "activation"
        elif "parameter" in depends[node.name]:
            origins[node.name] = "parameter"
        else:
            origins[node.name] = "constant"
    return origins


def _describe(node: Node, origin: str) -> str:
    if node.op == "placeholder":
        return "x" if origin == "input" else f"a {origin} (graph input {node.name})"
    return f"output of {node.target}"


def _bindings(placeholders: Sequence[Node], args: Sequence[Any]) -> dict[Any, int]:
    # The sizes of this call: each size symbol of the graph's inputs, bound to
    # the value it has in the call's own arguments.
    bindings: dict[Any, int] = {}
    for node, arg in zip(placeholders, args, strict=True):
        if isinstance(arg, torch.Tensor):
            for size, actual in zip(node.shape, arg.shape, strict=True):
                if getattr(size, "is_Symbol", False):
                    bindings[size] = int(actual)
        elif node.size is not None and isinstance(arg, int):
            bindings[node.size] = arg
    return bindings


def _concrete(size: Any, bindings: dict[Any, int]) -> int:
    if isinstance(size, int):
        return size
    return int(size.xreplace(bindings))


@dataclass
class _Seen:
    """What the calls inside one `Recorder.capture()` ran: `(partition, args)` per call."""

    calls: list[tuple[Partition, list[Any]]] = field(default_factory=list)

    def last(self) -> tuple[Partition, list[Any]]:
        if not self.calls:
            raise RuntimeError("no compiled graph ran inside the capture")
        return self.calls[-1]

    def record(self) -> BackwardRecord:
        """The record of the last compiled call (after its backward pass has run)."""
        partition, args = self.last()
        return partition.record(args)


class Recorder:
    """A torch.compile backend (inductor) that keeps every partition it compiles.

    **Arguments:** `inductor` and `functorch`, settings patched while it
    compiles (e.g. `activation_memory_budget`, or `custom_partitioner_fn`);
    none by default: inductor as it comes.

    **Attributes:** `partitions`, every partition in compile order;
    `compiles`, how many graphs dynamo handed to the backend.
    """

    def __init__(
        self, *, inductor: dict[str, Any] | None = None, functorch: dict[str, Any] | None = None
    ):
        self.inductor = dict(inductor or {})
        # AOTAutograd's cache would skip the partitioner, and so the graphs.
        self.functorch = {**(functorch or {}), "enable_autograd_cache": False}
        self.partitions: list[Partition] = []
        self._capture: _Seen | None = None

    def backend(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        """The `torch.compile` backend: inductor, noting the graphs it compiles."""
        partition = Partition(_roles(gm))
        self.partitions.append(partition)

        def inner_compile(graph_module: torch.fx.GraphModule, inputs, **kwargs):
            partition.note(graph_module, kwargs)
            return compile_fx_inner(graph_module, inputs, **kwargs)

        with functorch_config.patch(**self.functorch), inductor_config.patch(**self.inductor):
            compiled = compile_fx(
                gm, example_inputs, inner_compile=inner_compile, decompositions=decompositions()
            )

        def run(*args: Any) -> Any:  # dynamo's call: the graph's inputs, flat
            for seen in (self._capture, *_CAPTURES):
                if seen is not None:
                    seen.calls.append((partition, list(args)))
            return compiled(*args)

        return run

    @contextlib.contextmanager
    def capture(self) -> Iterator[_Seen]:
        """Note which partition each compiled call inside the block runs, with its arguments."""
        previous, self._capture = self._capture, _Seen()
        try:
            yield self._capture
        finally:
            self._capture = previous


#: The captures open on every recorder at once (`capture`).
_CAPTURES: list[_Seen] = []


@contextlib.contextmanager
def capture() -> Iterator[_Seen]:
    """Note which partition each compiled call of any `Recorder` inside the block runs, with its
    arguments: a port's own call, whichever compiled module it goes through."""
    seen = _Seen()
    _CAPTURES.append(seen)
    try:
        yield seen
    finally:
        _CAPTURES.remove(seen)


def decompositions() -> dict[Any, Callable]:
    """inductor's decomposition table, less its rewrites of `aten.mm` and `aten.addmm`.

    On the CPU, inductor rewrites a matrix-vector product whose sizes are at
    most 16 (or whose two operands hold at most 32 numbers) as multiplies and
    a sum, and guards on those sizes (torch/_inductor/decomposition.py, `mm`
    and `addmm`, torch 2.13): every range of D and F compiled a graph of its
    own. Without the rewrites, every size compiles as those above 16 do,
    where the exercise's models live, and one graph serves them all (two:
    dynamo specialises a size of 1). A product with a batch (the
    benchmarks') is never rewritten either way; the rewrites of outer
    products, which accelerators get, go too, and no product here is one.
    """
    table = dict(select_decomp_table())
    for packet in (torch.ops.aten.mm, torch.ops.aten.addmm):
        for overload in packet.overloads():
            table.pop(getattr(packet, overload), None)
    return table


def _roles(gm: torch.fx.GraphModule) -> tuple[str, ...]:
    """Each input of a dynamo graph: x ("input"), a parameter, or a size."""
    roles = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        example = node.meta["grapharg"].example
        if isinstance(example, torch.nn.Parameter):
            roles.append("parameter")
        elif isinstance(example, torch.Tensor):
            roles.append("input")
        else:
            roles.append("size")
    if roles.count("input") != 1:
        raise AssertionError(f"expected one tensor input (x) besides parameters, got {roles}")
    return tuple(roles)


# Dynamo settings for the port's own calls (patched around each call, never global):
#
# - Parameters get dynamic shapes too. By default dynamo keeps a parameter's
#   shape static, and x's size must equal fc1's, so every new (D, F) would
#   compile again; with `dynamic=True` and these two off, one graph serves every
#   size but 1 (`decompositions`; see `tests/torch/test_torch_compile.py`).
# - Running out of cache entries must fail loudly: by default dynamo then
#   runs the function eagerly, without a word, and the port would no
#   longer be compiled.
DYNAMO_SETTINGS: dict[str, Any] = {
    "force_parameter_static_shapes": False,
    "force_nn_module_property_static_shapes": False,
    **RECOMPILES,
}

_instances = iter(range(1 << 30))


class NoRemat(CustomPartitionerFn):
    """Inductor's own partitioner (min-cut), told to recompute nothing.

    Min-cut recomputes whatever it judges free to recompute, checkpoint or
    not. Here every forward operator of the joint graph (every node that no
    cotangent reaches, views aside) is tagged `MUST_SAVE`, the tag selective
    checkpointing uses, which bans its recomputation: the forward graph keeps
    what the backward graph reads, as eager autograd does. Views stay free to
    recompute, as min-cut wants them (AOTAutograd's plain `default_partition`
    saves a tensor and its views side by side, and inductor then computes a
    wrong weight gradient for this MLP: torch 2.13, CPU).
    """

    def __call__(self, gm: torch.fx.GraphModule, joint_inputs: Sequence[object], **kwargs: Any):
        backward: set[torch.fx.Node] = set()  # the nodes a cotangent reaches
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                if node.name.startswith("tangents"):
                    backward.add(node)
            elif any(arg in backward for arg in node.all_input_nodes):
                backward.add(node)
            elif _is_forward_operator(node) and "recompute" not in node.meta:
                node.meta["recompute"] = CheckpointPolicy.MUST_SAVE
        return min_cut_rematerialization_partition(gm, joint_inputs, **kwargs)

    def uuid(self) -> str:  # inductor's caches key on it
        return "remat-conformance: min-cut, forward operators MUST_SAVE"


def _is_forward_operator(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and not _node(node).view


class CompiledModule:
    """`torch.compile(model(x))` through inductor, with a `Recorder` and a dynamo cache of its own.

    Dynamo caches compiled graphs on the code object it compiles, so each
    instance compiles a copy of the call with a code object (and a cache,
    and a recompile limit) of its own. That is what lets a test or a mutant
    compile under other settings without touching the port's cache.

    **Arguments:** `dynamic`, for `torch.compile`; `settings`, the dynamo
    settings patched around each call (default `DYNAMO_SETTINGS`);
    `inductor`, `functorch`: settings patched while compiling (`Recorder`).
    """

    def __init__(
        self,
        *,
        dynamic: bool | None = True,
        settings: dict[str, Any] | None = None,
        inductor: dict[str, Any] | None = None,
        functorch: dict[str, Any] | None = None,
    ):
        self.recorder = Recorder(inductor=inductor, functorch=functorch)
        self.settings = DYNAMO_SETTINGS if settings is None else settings

        def call(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
            return model(x)

        call.__code__ = call.__code__.replace(co_name=f"compiled_call_{next(_instances)}")
        # fullgraph: a graph break would run part of the model eagerly, outside
        # the graphs the evidence reads; make it an error instead.
        self._compiled = torch.compile(
            call, backend=self.recorder.backend, dynamic=dynamic, fullgraph=True
        )
        # One patch, entered on every call: making one costs more than the call.
        self._patch = dynamo_config.patch(**self.settings)

    def __call__(self, model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        with self._patch:
            return self._compiled(model, x)
