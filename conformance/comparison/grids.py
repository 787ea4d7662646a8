"""compare's policy and composition matrices as a terminal shows them (issue 76): one line per
port, a mark per policy (or case), and under the grid one line per cell that needs words (a ✗,
a documented degradation). The full matrices, a row per cell with its spelling and reason,
are the page's and the JSON's (`policy_matrix.policy_table`, `composition_table`)."""

from __future__ import annotations

from typing import Any

from implementations.policies import POLICY_NAMES

from ..tables.model import Cell, Column, Items, Table, TableBuilder
from . import composition_matrix, policy_matrix

GRID_LEGEND = (
    "✓ as expected · ~ a documented degradation (listed under the grid) · ✗ fails (listed) · "
    "· not expressible (the reason: compare --json, or the report page) · - not measured"
)


def _mark(cell: Any, failed: bool, degraded: bool) -> tuple[str, str]:
    """A cell's mark and its tone's name (`tables.model.MARKS`)."""
    if not cell.expressible:
        return "·", "muted"
    if failed:
        return "✗", "fail"
    if cell.agrees is None:
        return "-", "muted"
    return ("~", "warn") if degraded else ("✓", "pass")


def policy_grid(rows: list[Any]) -> tuple[Table | None, Items]:
    """Ports by remat policies: each cell its mark and the KiB it saves; the findings under
    it. (None, no items) when no row measured a policy."""
    measured = [row for row in rows if getattr(row, "policies", None)]
    if not measured:
        return None, Items("", ())
    names = [n for n in POLICY_NAMES if any(c.policy == n for r in measured for c in r.policies)]
    table = TableBuilder(
        "remat policies: port x policy (KiB the backward pass keeps)",
        [Column("port"), *(Column(name, "right", drop=-1) for name in names)],
        caption=GRID_LEGEND,
        kind="policy-grid",
    )
    found, marks = [], []
    for row in measured:
        by_name = {cell.policy: cell for cell in row.policies}
        cells = []
        for name in names:
            cell = by_name.get(name)
            if cell is None:
                cells.append(Cell("-", "muted"))
                continue
            failed = policy_matrix.failed(cell)
            mark, tone = _mark(cell, failed, bool(cell.degradations))
            kib = f" {cell.kib:.2f}" if cell.kib is not None and mark in "✓~✗" else ""
            cells.append(Cell(f"{mark}{kib}", tone))
            if failed or (cell.expressible and cell.degradations):
                said = policy_matrix._verdict(cell).replace("\n", "; ")
                found.append(f"{mark} {row.name} · {name}: {said}")
                marks.append(tone)
        table.add([row.name, *cells], key=row.name)
    return table.build(), Items("", tuple(found), tuple(marks))


def composition_grid(rows: list[Any]) -> tuple[Table | None, Items]:
    """Ports by composition case: each cell its mark and the forward matmuls the backward
    pass reruns; the findings under it."""
    measured = [row for row in rows if getattr(row, "compositions", None)]
    if not measured:
        return None, Items("", ())
    cases = list(dict.fromkeys(c.case for r in measured for c in r.compositions))
    table = TableBuilder(
        "composition: port x case (forward matmuls rerun in the backward pass)",
        [Column("port"), *(Column(case, "right", drop=-1) for case in cases)],
        caption=GRID_LEGEND,
        kind="composition-grid",
    )
    found, marks = [], []
    for row in measured:
        by_case = {cell.case: cell for cell in row.compositions}
        cells = []
        for case in cases:
            cell = by_case.get(case)
            if cell is None:
                cells.append(Cell("-", "muted"))
                continue
            failed = composition_matrix.failed(cell)
            mark, tone = _mark(cell, failed, bool(cell.degradation))
            rerun = cell.rerun_matmuls
            count = f" {rerun}" if rerun is not None and mark in "✓~✗" else ""
            cells.append(Cell(f"{mark}{count}", tone))
            if failed or (cell.expressible and cell.degradation):
                said = composition_matrix._verdict(cell).text
                found.append(f"{mark} {row.name} · {case}: {said}")
                marks.append(tone)
        table.add([row.name, *cells], key=row.name)
    return table.build(), Items("", tuple(found), tuple(marks))
