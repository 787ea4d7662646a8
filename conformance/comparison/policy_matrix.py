"""The policy matrix of `compare`: port x remat policy (issue 21).

For each port and each policy of `implementations.policies.POLICY_NAMES`:
whether the port expresses it (its native spelling) or not (its reason);
where it does, the saved tensors by role and their KiB, the matmuls of the
backward pass, agreement with the canonical port under the same policy
(output and full VJP, within the rigorous bound), whether the instrument
shows what `checking.policy_expectations` expects, and any documented
degradation (shown as such, never as a pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from implementations.contract import Implementation, Params
from implementations.policies import POLICY_NAMES, Policy, declared, inexpressible

from ..checking import policy_expectations
from ..checking.checks import ConformanceError
from ..checking.properties import BUDGET_CHECKED, check_policy_record, checkpoint_argument
from ..checking.tolerance import forward_bound, vjp_comparison
from ..tables.model import Cell, Column, Table, TableBuilder
from .model import diff


@dataclass
class PolicyCell:
    """One port under one policy (see the module docstring); `error`: what went wrong."""

    policy: str
    expressible: bool
    spelling: str = ""  # the native spelling, or the reason it is inexpressible
    roles: list[str] = field(default_factory=list)
    kib: float | None = None
    backward_matmuls: int | None = None
    memory: dict[str, str] = field(default_factory=dict)  # role -> memory space, where said
    agrees: bool | None = None  # with the canonical port under the same policy
    worst_ratio: float | None = None
    expected: str = ""  # "" when the record shows what is expected; why not otherwise
    degradations: list[str] = field(default_factory=list)
    error: str = ""


def references(
    canonical: Implementation, params: Params, x: np.ndarray, cotangent: np.ndarray
) -> dict[str, dict[str, Any]]:
    """The canonical port's output and gradients under every policy it declares, by label: made
    once, in the process that holds the canonical port, for every port's row."""
    by_policy = {}
    for name in declared(canonical):
        policy = BUDGET_CHECKED if name == "budget" else _policy(name)
        argument = checkpoint_argument(canonical, policy)
        by_policy[policy.label] = {
            "output": np.asarray(canonical.forward(params, x, checkpoint=argument)),
            "grads": canonical.vjp(params, x, cotangent, checkpoint=argument).as_dict(),
        }
    return by_policy


def measure(
    port: Implementation,
    canonical: Implementation | dict[str, dict[str, Any]],
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
) -> list[PolicyCell]:
    """Every policy of the vocabulary on `port`, against the canonical port under the same
    policy. `canonical`: the canonical port, or its `references`."""
    if isinstance(canonical, Implementation):
        canonical = references(canonical, params, x, cotangent)
    cells = []
    for name in POLICY_NAMES:
        documented = [
            f"{d.short or d.what} ({d.measured})"
            for d in policy_expectations.degradations(port, name)
        ]
        if name not in declared(port):
            reason = inexpressible(port).get(name, "not declared")
            cells.append(PolicyCell(name, False, reason, degradations=documented))
            continue
        cell = PolicyCell(name, True, declared(port)[name], degradations=documented)
        policy = BUDGET_CHECKED if name == "budget" else _policy(name)
        try:
            _run(cell, port, canonical, policy, params, x, cotangent)
        except Exception as error:  # a broken port gets a cell that says so, not a crash
            cell.error = f"{type(error).__name__}: {error}"
        cells.append(cell)
    return cells


def failed(cell: PolicyCell) -> bool:
    """Whether a cell is a ✗: it raised, disagrees with the canonical, or its instrument does
    not show what is expected (a documented degradation is expected, and not a ✗)."""
    return bool(cell.error) or cell.agrees is False or bool(cell.expected)


def _policy(name: str):
    return Policy(name)


def _run(cell, port, references, policy, params, x, cotangent) -> None:
    argument = checkpoint_argument(port, policy)
    # The canonical cannot express budget: every applied policy gives no remat's results.
    reference = references.get(policy.label) or references["none"]
    out = port.forward(params, x, checkpoint=argument)
    diffs = [diff(out, reference["output"], forward_bound(params, x))]
    grads = port.vjp(params, x, cotangent, checkpoint=argument).as_dict()
    expected = reference["grads"]
    for name, (shift, bound) in vjp_comparison(params, x, cotangent, grads, expected).items():
        diffs.append(diff(grads[name], expected[name], bound, shift))
    cell.worst_ratio = max(d.worst_ratio for d in diffs)
    cell.agrees = cell.worst_ratio <= 1.0
    record = port.backward_record(params, x, checkpoint=argument)
    cell.roles = sorted(record.saved_roles)
    cell.kib = record.saved_bytes / 1024
    cell.backward_matmuls = record.backward_matmuls
    cell.memory = {t.role: t.memory_space for t in record.kept if t.role and t.memory_space}
    try:
        check_policy_record(port, policy, record, params.dim, params.features)
    except ConformanceError as error:
        cell.expected = str(error).split(": ", 1)[-1]


#: What a role names, for every legend that shows roles.
ROLES_LEGEND = (
    "roles: x the input, d1 = x @ W1, h = d1 + b1 (the first layer's output), a = relu(h), "
    "mask relu's mask, y = a @ W2 + b2 (the second layer's output); <host>: kept in host memory"
)


def policy_table(rows: list[Any], held: dict[str, str] | None = None) -> Table:
    """A heading row per port, one row per policy: the matrix (rows: `PortComparison`s; a
    row that measured no policy, not a port, has none). `held`: port -> whose expectations
    and whose instrument held it, said in its heading."""
    table = TableBuilder(
        "remat policies: what each port expresses, saves and recomputes",
        [
            Column("policy", wrap=True),
            Column("saved", number="bytes"),
            Column("mm", "right", "count"),
            Column("canonical", wrap=True),
            Column("verdict", wrap=True),
        ],
        caption="policy: under it, the port's own spelling · saved: the roles kept and their "
        f"KiB ({ROLES_LEGEND}) · mm: matmuls in backward · canonical: output and VJP against "
        "Flax linen under the same policy (rigorous bound) · verdict: as expected; documented "
        "degradation (shown as such, never as a pass); or not expressible, with why",
        kind="policies",
    )
    for row in rows:
        cells = getattr(row, "policies", None) or []
        if not cells:
            continue
        said = (held or {}).get(row.name, "")
        table.heading(f"{row.name} · {said}" if said else row.name, key=row.name)
        for cell in cells:
            matmuls = "-" if cell.backward_matmuls is None else str(cell.backward_matmuls)
            spelling = cell.spelling if cell.expressible else ""
            table.add(
                [
                    Cell(cell.policy, note=spelling),
                    _saved(cell),
                    matmuls,
                    _agreement(cell),
                    _verdict_cell(cell),
                ],
                key=f"{row.name} {cell.policy}",
            )
    return table.build()


def _saved(cell: PolicyCell) -> Cell:
    if not cell.expressible or cell.error:
        return Cell("-", "muted")
    roles = ", ".join(
        f"{r}<{cell.memory[r]}>" if cell.memory.get(r) == "host" else r for r in cell.roles
    )
    return Cell(f"{{{roles}}}", note=f"{cell.kib:.2f} KiB")


def _agreement(cell: PolicyCell) -> Cell:
    if cell.agrees is None:
        return Cell("-", "muted")
    return Cell("equal", "pass") if cell.agrees else Cell(f"off x{cell.worst_ratio:.2g}", "fail")


def _verdict(cell: PolicyCell) -> str:
    """The cell's verdict in words, one line per finding."""
    if not cell.expressible:
        return f"not expressible: {cell.spelling}"  # the reason
    if cell.error:
        return f"error: {cell.error}"
    notes = [f"documented degradation: {d}" for d in cell.degradations]
    if cell.expected:
        notes.insert(0, cell.expected)
    elif not cell.degradations:
        notes.insert(0, "as expected")
    return "\n".join(notes)


def _verdict_cell(cell: PolicyCell) -> Cell:
    if not cell.expressible:
        mark = "muted"
    elif cell.error or cell.expected:
        mark = "fail"
    else:
        mark = "warn" if cell.degradations else "pass"
    return Cell(_verdict(cell), mark)
