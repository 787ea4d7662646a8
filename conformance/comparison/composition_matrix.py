"""The composition matrix of `compare`: port x composition case (once, twice, under a trainer).

For each port and each case of `implementations.composition.CASES`: whether the port expresses
it (its native spelling) or not (its reason); where it does, the kept roles and bytes, the
forward matmuls in the forward pass and again in the backward (the forward evaluations),
agreement with the canonical port's checkpointed results, whether the instrument shows what
the stack declares (`checking.properties.k_composition`), who declared that and who measured
it, and a documented degradation (an extra forward for nothing, upstream's doing) said as
such. Its tables are `tables.kinds.compare_matrices`' and `compare_grids`'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from implementations import composition
from implementations.contract import Implementation, Params

from ..checking import policy_expectations, provenance
from ..checking.checks import ConformanceError
from ..checking.properties import k_composition as composed_records
from ..checking.tolerance import forward_bound, vjp_comparison
from .model import diff


@dataclass
class CompositionCell:
    """One port under one composition case (see the module docstring)."""

    case: str
    expressible: bool
    spelling: str = ""  # the native spelling, or the reason it is not composable
    roles: list[str] | None = None
    kib: float | None = None
    forward_matmuls: int | None = None
    rerun_matmuls: int | None = None
    agrees: bool | None = None
    worst_ratio: float | None = None
    expected: str = ""  # "" when the record shows what is declared; why not otherwise
    declared_by: str = ""
    measured_by: str = ""
    degradation: str = ""
    error: str = ""

    @property
    def failed(self) -> bool:
        """Whether the cell is a ✗: it raised, changed the values, or its instrument does not
        show what is declared (a documented degradation is declared, not a ✗)."""
        return bool(self.error) or self.agrees is False or bool(self.expected)


def measure(
    port: Implementation,
    reference: dict[str, Any],
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
) -> list[CompositionCell]:
    """Every composition case on `port`; `reference`: the canonical's checkpointed output and
    gradients (`{"output", "grads"}`), which composing regions must not change."""
    expressed, reasons = composition.declared(port), composition.not_composable(port)
    table, _ = composed_records.table_of(port)
    family = policy_expectations.family(port) or "unknown"
    whose = f"{'the port' if composed_records.own(port) is not None else 'the suite'} ({family})"
    cells = []
    for case in composition.CASES:
        if case not in expressed:
            cells.append(CompositionCell(case, False, reasons[case]))
            continue
        cell = CompositionCell(case, True, expressed[case], declared_by=whose)
        declared = table.get(case)
        if declared is not None and declared.degradation:
            cell.degradation = declared.why
        try:
            _run(cell, port, reference, params, x, cotangent)
        except Exception as error:  # a broken port gets a cell that says so, not a crash
            cell.error = f"{type(error).__name__}: {error}"
        cells.append(cell)
    return cells


def _run(cell, port, reference, params, x, cotangent) -> None:
    nesting = composition.Nesting(cell.case)
    out = port.forward(params, x, checkpoint=nesting)
    diffs = [diff(out, reference["output"], forward_bound(params, x))]
    grads = port.vjp(params, x, cotangent, checkpoint=nesting).as_dict()
    expected = reference["grads"]
    for name, (shift, bound) in vjp_comparison(params, x, cotangent, grads, expected).items():
        diffs.append(diff(grads[name], expected[name], bound, shift))
    cell.worst_ratio = max(d.worst_ratio for d in diffs)
    cell.agrees = cell.worst_ratio <= 1.0
    record = provenance.stamped(port, port.backward_record(params, x, checkpoint=nesting))
    plain = port.backward_record(params, x, checkpoint=False)
    cell.measured_by = record.measured_by
    cell.roles = sorted(record.saved_roles)
    cell.kib = record.saved_bytes / 1024
    cell.forward_matmuls = record.forward_matmuls
    cell.rerun_matmuls = composed_records.rerun_matmuls(record, plain)
    try:
        composed_records.check_record(port, cell.case, record, plain)
    except ConformanceError as error:
        cell.expected = str(error).split(": ", 2)[-1]


def failed(cell: CompositionCell) -> bool:
    """Whether a cell is a ✗ (`CompositionCell.failed`)."""
    return cell.failed
