"""MindSpore's graph mode (`GRAPH_MODE`): the stack's `MLP` compiled whole, forward and VJP,
and the compiler's IR as the evidence. Imports mindspore and numpy.

`ms.set_context(mode=GRAPH_MODE)` is process-global (and importing the
stack sets PyNative), so `enter()` belongs in a process of its own: the
compare row and the bench stack start one.

- **Running:** `GraphMLP(params, checkpoint)`: one `MLP` cell whose
  parameters are loaded per call (`load`), its compiled forward (`forward`)
  and its compiled forward-and-VJP (`vjp`: `GradOperation` with a
  cotangent, x's gradient and every parameter's).
- **Evidence:** `ir_evidence(...)` compiles a fresh `GraphMLP`'s VJP with
  the IR saved into a scratch directory, and reads the graph MindSpore
  writes after its `add_recomputation` pass (`*_add_recomputation_*.ir`;
  `parse_ir` reads any such text): ops per kind forward and backward, the
  recomputed copies (`duplicated: Bool(1)`, each with the `recompute_id` of
  the forward node it copies), and what backward nodes read from the
  forward (the "saved" values of a whole-graph compile).

Pitfalls (MindSpore 2.10.0): `construct`'s first argument must be named
`self` in graph mode; `MS_DEV_SAVE_GRAPHS` is read once, when mindspore
is imported, so the IR is switched on per compile with
`set_context(save_graphs=...)` (deprecated, still honoured); without
a forward output in the compiled graph the compiler drops the forward and
nothing is "duplicated", so `VJPCell` returns the output too.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from ...contract import BackwardRecord, Params, SavedTensor, check_x
from ..numpy import canonical_params
from .mlp import MLP, parameters

__all__ = ["GraphMLP", "IRMissing", "canonical_params", "enter", "ir_evidence", "parse_ir"]

#: The graph MindSpore writes after its recompute pass (one per compile, numbered).
IR_PATTERN = "*add_recomputation*.ir"
INSTRUMENT = (
    "MindSpore graph-mode IR after the add_recomputation pass (saved with "
    "set_context(save_graphs)): recomputed = nodes marked duplicated; saved = forward "
    "values read by backward nodes (scope Gradients/ or duplicated)"
)
#: Nodes that move or order values and compute nothing: not counted as ops.
BOOKKEEPING = frozenset(
    {"Load", "MakeTuple", "TupleGetItem", "Depend", "UpdateState", "Return", "StopGradient"}
)
#: The role of the n-th forward node of a kind, in the MLP's chain x@W1 (d1), +b1 (h),
#: relu (a), @W2, +b2 (y).
_ROLES = {("MatMulExt", 0): "d1", ("Add", 0): "h", ("ReLU", 0): "a", ("Add", 1): "y"}


def enter() -> None:
    """Switch this process to graph mode (process-global: call it in a process of its own)."""
    ms.set_context(mode=ms.GRAPH_MODE)


def in_graph_mode() -> bool:
    return ms.get_context("mode") == ms.GRAPH_MODE


_GRAD = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)


class VJPCell(nn.Cell):
    """`(output, ((dx,), (dw1, db1, dw2, db2)))` of an `MLP` for x and a cotangent, one graph."""

    def __init__(self, model: MLP):
        super().__init__()
        self.model = model
        self.weights = ms.ParameterTuple(parameters(model))

    def construct(self, x, cotangent):  # graph mode wants the first argument named self
        # The output too: a graph that returns gradients alone loses its forward, and
        # the recompute pass then has no forward node to copy.
        return self.model(x), _GRAD(self.model, self.weights)(x, cotangent)


class GraphMLP:
    """An `MLP` (checkpoint on: `Cell.recompute()`) run in graph mode, parameters loaded per
    call; its first `forward` and `vjp` compile. `mlp`: the model class (a mutant's)."""

    def __init__(self, params: Params, *, checkpoint: bool, mlp: type[MLP] = MLP):
        if not in_graph_mode():
            raise RuntimeError("GraphMLP needs graph mode: call graph.enter() first")
        self.features = params.features
        self.model = mlp(params, checkpoint=checkpoint)
        self.vjp_cell = VJPCell(self.model)

    def load(self, params: Params) -> None:
        """Copy `params` into the cell (same shapes: a new shape would recompile)."""
        for parameter, array in zip(parameters(self.model), params.as_dict().values(), strict=True):
            if tuple(parameter.shape) != array.shape:
                raise ValueError(
                    f"params: shape {array.shape} for {parameter.name}, compiled for "
                    f"{tuple(parameter.shape)}"
                )
            parameter.set_data(ms.Tensor(np.array(array, np.float32, copy=True)))

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.model(ms.Tensor(check_x(x))).asnumpy().copy()

    def vjp(self, x: np.ndarray, cotangent: np.ndarray) -> tuple[np.ndarray, dict]:
        """The output and the gradients by name (w1, b1, w2, b2, x), as numpy copies."""
        x = check_x(x)
        cotangent = np.array(cotangent, np.float32, copy=True)
        if cotangent.shape != (self.features,):
            raise ValueError(f"cotangent must have shape ({self.features},), got {cotangent.shape}")
        out, ((dx,), weight_grads) = self.vjp_cell(ms.Tensor(x), ms.Tensor(cotangent))
        names = ("w1", "b1", "w2", "b2")
        grads = {n: g.asnumpy().copy() for n, g in zip(names, weight_grads, strict=True)}
        grads["x"] = dx.asnumpy().copy()
        return out.asnumpy().copy(), grads


# ---------------------------------------------------------------------------
# The IR
# ---------------------------------------------------------------------------


class IRMissing(RuntimeError):
    """MindSpore saved no `*_add_recomputation_*.ir` (another version names its passes
    differently, or saves no IR)."""


@contextlib.contextmanager
def saving_graphs(directory: Path) -> Iterator[None]:
    """Save the IR of what compiles inside into `directory`, and stop after."""
    try:
        ms.set_context(save_graphs=True, save_graphs_path=str(directory))
    except (ValueError, TypeError, AttributeError) as error:
        raise IRMissing(
            f"MindSpore {ms.__version__} refuses set_context(save_graphs=...): {error}"
        ) from None
    try:
        yield
    finally:
        ms.set_context(save_graphs=False)


@dataclass(frozen=True)
class Node:
    """One node of the IR: its op kind, the values it reads, and its marks."""

    key: str  # "%3"
    kind: str  # "MatMulExt", "ReLU", ... ("PrimFunc_" dropped)
    args: tuple[str, ...]  # "%2", "%para1_x", ...
    scope: str
    duplicated: bool
    recompute_id: int | None
    shape: tuple[int, ...] | None  # of the output, when the IR gives one tensor
    dtype: str

    @property
    def computes(self) -> bool:
        return self.kind not in BOOKKEEPING and not self.kind.startswith("@")

    @property
    def backward(self) -> bool:
        """In the backward pass: a gradient node, or a recomputed copy."""
        return self.scope.startswith("Gradients") or self.duplicated


@dataclass
class GraphEvidence:
    """What one compile's IR after the recompute pass shows (`parse_ir`)."""

    file: str
    forward: dict[str, int]
    backward: dict[str, int]  # recomputed copies included
    recomputed: dict[str, int]  # the duplicated nodes, by kind
    # Each copy's kind and recompute_id, and whether one forward node of that kind has it.
    copies: list[tuple[str, int | None, bool]] = field(default_factory=list)
    saved: tuple[SavedTensor, ...] = ()
    # The scopes of the backward nodes that read a recomputed copy.
    copy_readers: list[str] = field(default_factory=list)

    @property
    def backward_matmuls(self) -> int:
        return sum(n for kind, n in self.backward.items() if "matmul" in kind.lower())

    def record(self) -> BackwardRecord:
        return BackwardRecord(
            instrument=f"{INSTRUMENT} ({self.file})",
            saved=self.saved,
            recomputed=dict(self.recomputed),
            backward_matmuls=self.backward_matmuls,
        )


_NODE = re.compile(r"^\s*(%\d+)\([^)]*\) = ([^\s(]+)\((.*)$")
_PARAM = re.compile(r"^(%para\d+_[^:\s]+): <(.*)$")
_TENSOR = re.compile(r"-> \(<(?:Ref\[)?Tensor\[(\w+)\]\]?, \(([\d, ]*)\)")


def _call_args(text: str) -> str:
    """The text of a call's arguments: up to the parenthesis that closes the call."""
    depth = 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                return text[:i]
            depth -= 1
    return text


def parse_nodes(text: str) -> tuple[list[Node], list[str]]:
    """The IR's nodes in order, and its graph inputs that are not parameters (x, then the
    cotangent). Node keys restart per subgraph; the MLP's graph has one."""
    nodes: list[Node] = []
    inputs: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        param = _PARAM.match(line)
        if param:
            if "is_parameter" not in param.group(2):
                inputs.append(param.group(1))
            continue
        found = _NODE.match(line)
        if not found:
            continue
        key, op, rest = found.groups()
        args = tuple(re.findall(r"%para\d+_[\w.]+|%\d+", _call_args(rest)))
        scope, shape, dtype = "", None, ""
        for follow in lines[i + 1 : i + 4]:  # the type line, then "# Scope: (...)"
            tensor = _TENSOR.search(follow)
            if tensor and shape is None:
                dtype = tensor.group(1).lower()
                shape = tuple(int(n) for n in tensor.group(2).replace(" ", "").split(",") if n)
            if "# Scope:" in follow:
                scope = follow.split("# Scope:", 1)[1].strip().strip("()")
                break
        recompute_id = re.search(r"recompute_id: I64\((-?\d+)\)", rest)
        nodes.append(
            Node(
                key=key,
                kind=op.removeprefix("PrimFunc_").removeprefix("Prim::"),
                args=args,
                scope=scope,
                duplicated="duplicated: Bool(1)" in rest,
                recompute_id=int(recompute_id.group(1)) if recompute_id else None,
                shape=shape,
                dtype=dtype,
            )
        )
    return nodes, inputs


def parse_ir(text: str, file: str = "") -> GraphEvidence:
    """The evidence in one IR text (`*_add_recomputation_*.ir`); raise `IRMissing` if it
    holds no node (not an IR)."""
    nodes, inputs = parse_nodes(text)
    if not nodes:
        raise IRMissing(f"{file or 'the IR'} holds no node this parser reads")
    by_key = {node.key: node for node in nodes}
    forward = [n for n in nodes if n.computes and not n.backward]
    backward = [n for n in nodes if n.computes and n.backward]
    copies = [n for n in nodes if n.duplicated]
    originals = {(n.kind, n.recompute_id) for n in forward if n.recompute_id is not None}
    roles, seen = {}, Counter()
    for node in forward:
        roles[node.key] = _ROLES.get((node.kind, seen[node.kind]), "")
        seen[node.kind] += 1

    def source(key: str) -> str:
        # Through the nodes that only order values (Depend's first argument is its value).
        node = by_key.get(key)
        while node is not None and node.kind == "Depend" and node.args:
            key, node = node.args[0], by_key.get(node.args[0])
        return key

    saved, kept = [], set()
    for reader in backward:
        for arg in map(source, reader.args):
            if arg in kept:
                continue
            node = by_key.get(arg)
            if inputs and arg == inputs[0]:  # x
                kept.add(arg)
                note = f"graph input {arg}"
                saved.append(SavedTensor(_input_shape(text, arg), "float32", "input", note, "x"))
            elif node is not None and node.computes and not node.backward:
                kept.add(arg)
                role = roles.get(arg, "")
                note = f"{node.kind} {node.key}" + (f": {role}" if role else "")
                saved.append(
                    SavedTensor(node.shape or (), node.dtype or "float32", "activation", note, role)
                )
    copy_keys = {n.key for n in copies}
    readers = sorted({n.scope for n in backward if not n.duplicated and copy_keys & set(n.args)})
    return GraphEvidence(
        file=file,
        forward=dict(Counter(n.kind for n in forward)),
        backward=dict(Counter(n.kind for n in backward)),
        recomputed=dict(Counter(n.kind for n in copies)),
        copies=[(n.kind, n.recompute_id, (n.kind, n.recompute_id) in originals) for n in copies],
        saved=tuple(saved),
        copy_readers=readers,
    )


def _input_shape(text: str, key: str) -> tuple[int, ...]:
    found = re.search(re.escape(key) + r": <Tensor\[\w+\], \(([\d, ]*)\)>", text)
    if not found:
        return ()
    return tuple(int(n) for n in found.group(1).replace(" ", "").split(",") if n)


def ir_evidence(
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    *,
    checkpoint: bool,
    mlp: type[MLP] = MLP,
) -> GraphEvidence:
    """Compile a fresh `GraphMLP`'s VJP with the IR saved, and read it (`parse_ir`).

    Raises `IRMissing`, saying what MindSpore wrote instead, when no
    `*_add_recomputation_*.ir` appears.
    """
    with tempfile.TemporaryDirectory(prefix="remat-ms-ir-") as scratch:
        graph = GraphMLP(params, checkpoint=checkpoint, mlp=mlp)
        with saving_graphs(Path(scratch)):
            graph.vjp(x, cotangent)
        found = sorted(Path(scratch).rglob(IR_PATTERN))
        if not found:
            written = len(list(Path(scratch).rglob("*.ir")))
            raise IRMissing(
                f"MindSpore {ms.__version__} wrote no {IR_PATTERN} in graph mode "
                f"({written} other .ir files): its recompute pass is named differently or gone"
            )
        return parse_ir(found[-1].read_text(errors="replace"), found[-1].name)
