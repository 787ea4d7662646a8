"""The policy matrix of `compare`: port x remat policy (issue 21).

For each port and each policy of `implementations.policies.POLICY_NAMES`:
whether the port expresses it (its native spelling) or not (its reason);
where it does, the saved tensors by role and their KiB, the matmuls of the
backward pass, agreement with the canonical port under the same policy
(output and full VJP, within the rigorous bound), whether the instrument
shows what `checking.policy_expectations` expects, and any documented
degradation (shown as such, never as a pass). Its tables are `tables.kinds.compare_matrices`'
and `compare_grids`'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from implementations.contract import Implementation, Params
from implementations.policies import POLICY_NAMES, Policy, declared, inexpressible

from ..checking import policy_expectations
from ..checking.checks import ConformanceError
from ..checking.properties.j_policies import (
    BUDGET_CHECKED,
    check_policy_record,
    checkpoint_argument,
)
from ..checking.tolerance import forward_bound, vjp_comparison
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

    @property
    def failed(self) -> bool:
        """Whether the cell is a ✗: it raised, disagrees with the canonical, or its instrument
        does not show what is expected (a documented degradation is expected, not a ✗)."""
        return bool(self.error) or self.agrees is False or bool(self.expected)


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
    """Whether a cell is a ✗ (`PolicyCell.failed`)."""
    return cell.failed


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
