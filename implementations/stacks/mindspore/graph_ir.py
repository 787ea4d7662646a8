"""MindSpore's graph-mode IR as evidence: what one compile's graph after the
`add_recomputation` pass shows. Plain text in, numpy-free: imports the contract only, never
mindspore, so it reads a saved `*_add_recomputation_*.ir` anywhere.

- `parse_nodes(text)`: the nodes (`%3 = PrimFunc_MatMulExt(%1, %2) cnode_attrs: {...}`, the
  type line, `# Scope: (...)`), and the graph inputs that are not parameters.
- `parse_ir(text)`: a `GraphEvidence`: ops per kind forward and backward (a node is backward
  if its scope starts with `Gradients` or it is a recomputed copy), the copies
  (`duplicated: Bool(1)`, each with the `recompute_id` of the forward node it copies), and
  what backward nodes read from the forward: x and the forward's computed values, the
  "saved" values of a whole-graph compile.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ...contract import BackwardRecord, SavedTensor

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


class IRMissing(RuntimeError):
    """MindSpore saved no `*_add_recomputation_*.ir` (another version names its passes
    differently, or saves no IR)."""


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
