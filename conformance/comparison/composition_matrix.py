"""The composition matrix of `compare`: port x composition case (once, twice, under a trainer).

For each port and each case of `implementations.composition.CASES`: whether the port expresses
it (its native spelling) or not (its reason); where it does, the kept roles and bytes, the
forward matmuls in the forward pass and again in the backward (the forward evaluations),
agreement with the canonical port's checkpointed results, whether the instrument shows what
the stack declares (`checking.composition`), who declared that and who measured it, and a
documented degradation (an extra forward for nothing, upstream's doing) said as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from implementations import composition
from implementations.contract import Implementation, Params

from ..checking import composition as composed_records
from ..checking import policy_expectations, provenance
from ..checking.checks import ConformanceError
from ..checking.tolerance import forward_bound, vjp_comparison
from ..tables.model import Cell, Column, Table, TableBuilder
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
    """Whether a cell is a ✗: it raised, changed the values, or its instrument does not show
    what is declared (a documented degradation is declared, and not a ✗)."""
    return bool(cell.error) or cell.agrees is False or bool(cell.expected)


def composition_table(rows: list[Any]) -> Table:
    """A heading row per port, one row per case (rows: `PortComparison`s)."""
    table = TableBuilder(
        "composition: the region once, wrapped twice, and under a trainer's region",
        [
            Column("case", wrap=True),
            Column("saved", number="bytes"),
            Column("fwd mm", "right", "count", short="fwd"),
            Column("rerun mm", "right", "count", short="rerun"),
            Column("canonical", wrap=True),
            Column("verdict", wrap=True),
        ],
        caption="saved: kept roles (x, d1 = x@W1, h = d1 + b1, a = relu(h), mask, y = a@W2 + "
        "b2) · KiB kept · fwd mm: matmuls in the forward pass · rerun mm: forward matmuls the "
        "backward pass runs again (its matmuls beyond the no-checkpoint gradient's) · "
        "canonical: output and VJP against Flax linen's checkpoint (rigorous bound) · verdict: "
        "against what the stack declares, who declared it and who measured it",
        kind="composition",
    )
    for row in rows:
        cells = getattr(row, "compositions", None) or []
        if not cells:
            continue
        table.heading(row.name, key=row.name)
        for cell in cells:
            table.add(
                [
                    cell.case,
                    _saved(cell),
                    _count(cell.forward_matmuls, cell),
                    _count(cell.rerun_matmuls, cell),
                    _agreement(cell),
                    _verdict(cell),
                ],
                key=f"{row.name} {cell.case}",
            )
    return table.build()


def _saved(cell: CompositionCell) -> Cell:
    if not cell.expressible or cell.error or cell.roles is None:
        return Cell("-", "muted")
    return Cell("{" + ", ".join(cell.roles) + "}", note=f"{cell.kib:.2f} KiB")


def _count(value: int | None, cell: CompositionCell) -> Cell:
    if not cell.expressible or cell.error or value is None:
        return Cell("-", "muted")
    return Cell(str(value))


def _agreement(cell: CompositionCell) -> Cell:
    if cell.agrees is None:
        return Cell("-", "muted")
    return Cell("equal", "pass") if cell.agrees else Cell(f"off x{cell.worst_ratio:.2g}", "fail")


#: Who measured a record, in words (`checking.provenance`).
_MEASURED = {"suite": "the suite's instrument", "port": "the port (self-reported)"}


def _verdict(cell: CompositionCell) -> Cell:
    if not cell.expressible:
        return Cell(f"not expressible: {cell.spelling}", "muted")
    if cell.error:
        return Cell(f"error: {cell.error}", "fail")
    measured = _MEASURED.get(cell.measured_by, cell.measured_by or "?")
    who = f"declared by {cell.declared_by or 'nobody'}, measured by {measured}"
    if cell.expected:
        return Cell(cell.expected, "fail", note=who)
    if cell.degradation:
        return Cell(f"documented degradation: {cell.degradation}", "warn", note=who)
    return Cell("as declared", "pass", note=who)
