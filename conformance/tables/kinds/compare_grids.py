"""compare's policy and composition matrices as grids, port x policy and port x case.

- `terminal_policy_grid`, `terminal_composition_grid`: as a terminal shows them (issue 76): one
  line per port, a mark per policy (or case), and under the grid one line per cell that needs
  words (a ✗, a documented degradation);
- `policy_grid`, `composition_grid`: as the page shows them: a short cell each (✓ ⚠ ✗ ·, the
  roles kept under it), each port's full lines (`compare_matrices`) in its row's details.

A row is a `PortComparison` (`comparison.measure`, or `comparison.restore` from the JSON), read
by its fields, its cells by their fields and their `failed` verdict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from implementations.composition import CASES
from implementations.policies import POLICY_NAMES

from ..model import Cell, Column, Items, Table, TableBuilder
from . import compare_matrices

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


def _terminal_grid(
    title: str,
    kind: str,
    rows: list[Any],
    names: list[str],
    cells_of: Callable[[Any], list[Any]],
    figure: Callable[[Any], str | None],
    degraded: Callable[[Any], bool],
    words: Callable[[Any], str],
) -> tuple[Table, Items]:
    """Ports by `names` (policies or cases: a cell's `policy` or `case`): each cell its mark and
    its `figure`; under it, a line for each ✗ and each documented degradation."""
    table = TableBuilder(
        title,
        [Column("port"), *(Column(name, "right", drop=-1) for name in names)],
        caption=GRID_LEGEND,
        kind=kind,
    )
    found, marks = [], []
    for row in rows:
        # A policy cell is named by its policy, a composition cell by its case.
        by_name = {getattr(cell, "policy", None) or cell.case: cell for cell in cells_of(row)}
        cells = []
        for name in names:
            cell = by_name.get(name)
            if cell is None:
                cells.append(Cell("-", "muted"))
                continue
            mark, tone = _mark(cell, cell.failed, degraded(cell))
            value = figure(cell)
            cells.append(Cell(f"{mark} {value}" if value and mark in "✓~✗" else mark, tone))
            if cell.failed or (cell.expressible and degraded(cell)):
                found.append(f"{mark} {row.name} · {name}: {words(cell)}")
                marks.append(tone)
        table.add([row.name, *cells], key=row.name)
    return table.build(), Items("", tuple(found), tuple(marks))


def terminal_policy_grid(rows: list[Any]) -> tuple[Table | None, Items]:
    """Ports by remat policies: each cell its mark and the KiB it saves; the findings under
    it. (None, no items) when no row measured a policy."""
    measured = [row for row in rows if getattr(row, "policies", None)]
    if not measured:
        return None, Items("", ())
    names = [n for n in POLICY_NAMES if any(c.policy == n for r in measured for c in r.policies)]
    return _terminal_grid(
        "remat policies: port x policy (KiB the backward pass keeps)",
        "policy-grid",
        measured,
        names,
        lambda row: row.policies,
        lambda cell: None if cell.kib is None else f"{cell.kib:.2f}",
        lambda cell: bool(cell.degradations),
        lambda cell: compare_matrices.policy_verdict(cell).replace("\n", "; "),
    )


def terminal_composition_grid(rows: list[Any]) -> tuple[Table | None, Items]:
    """Ports by composition case: each cell its mark and the forward matmuls the backward
    pass reruns; the findings under it."""
    measured = [row for row in rows if getattr(row, "compositions", None)]
    if not measured:
        return None, Items("", ())
    cases = list(dict.fromkeys(c.case for r in measured for c in r.compositions))
    return _terminal_grid(
        "composition: port x case (forward matmuls rerun in the backward pass)",
        "composition-grid",
        measured,
        cases,
        lambda row: row.compositions,
        lambda cell: None if cell.rerun_matmuls is None else str(cell.rerun_matmuls),
        lambda cell: bool(cell.degradation),
        lambda cell: compare_matrices.composition_verdict(cell).text,
    )


#: A composition case's column heading.
CASE_HEADINGS = {"once": "once", "twice": "twice", "under_trainer": "under a trainer"}


def step_matmuls(cell: Any) -> int | None:
    """The matmuls one step runs under a composition case: forward, and again in backward."""
    if cell.forward_matmuls is None or cell.rerun_matmuls is None:
        return None
    return cell.forward_matmuls + cell.rerun_matmuls


def _details(lines: Table, title: str, prefix: str) -> Table:
    """A matrix's lines for one port (its heading row dropped), as a row's details; a line's
    key ("pytorch full") becomes `prefix` and its case ("policy-pytorch-full")."""
    rows = tuple(replace(r, key=f"{prefix}-{r.key.split(' ', 1)[-1]}") for r in lines.rows
                 if not r.heading)  # fmt: skip
    return Table(title, lines.columns, rows)


def _policy(cell: Any) -> Cell:
    roles = "{" + ",".join(cell.roles) + "}" if cell.roles else ""
    if not cell.expressible:
        return Cell("·", "muted", title=f"not expressible: {cell.spelling}")
    if cell.error:
        return Cell("✗ error", "fail", title=cell.error)
    if cell.failed:
        return Cell("✗", "fail", note=roles, title=cell.expected or "differs from the canonical")
    if cell.degradations:
        return Cell("⚠", "warn", note=roles, title="; ".join(cell.degradations))
    return Cell("✓", "pass", note=roles)


def policy_grid(comparison: Any, held: Mapping[str, str] | None = None) -> Table | None:
    """Port x remat policy, one cell each: ✓ as expected, ⚠ a documented degradation, ✗
    not, · not expressible; the kept roles under it; each port's lines (spelling, KiB,
    matmuls, agreement, verdict) in its details. None when no port measured a policy."""
    measured = [row for row in comparison.ports if row.policies]
    if not measured:
        return None
    table = TableBuilder(
        "Remat policies: port x policy",
        [Column("port"), *(Column(name, "center") for name in POLICY_NAMES)],
        caption="✓ the canonical's results and the saves the stack declares · ⚠ a "
        "documented degradation (declared, never a pass in disguise: hover or open the "
        "row) · ✗ not · ·: not expressible, with why in the row's details. Under a mark: "
        f"the roles kept ({compare_matrices.ROLES_LEGEND}).",
        kind="policies",
    )
    for row in measured:
        by_policy = {c.policy: c for c in row.policies}
        said = (held or {}).get(row.name, "")
        lines = _details(compare_matrices.policy_table([row]), f"{row.name} · {said}".rstrip(" ·"),
                         f"policy-{row.name}")  # fmt: skip
        cells = [_policy(by_policy[p]) if p in by_policy else Cell("") for p in POLICY_NAMES]
        table.add([Cell(row.name, note=row.framework), *cells], key=row.name, details=lines)
    return table.build()


def _composition(cell: Any) -> Cell:
    if not cell.expressible:
        return Cell("·", "muted", title=f"not expressible: {cell.spelling}")
    if cell.error:
        return Cell("✗ error", "fail", title=cell.error)
    matmuls = step_matmuls(cell)
    text = "" if matmuls is None else f"{matmuls} mm"
    roles = "{" + ",".join(cell.roles or []) + "}"
    if cell.failed:
        return Cell(f"✗ {text}", "fail", note=roles, title=cell.expected or "differs")
    if cell.degradation:
        return Cell(f"⚠ {text}", "warn", note=roles, title=cell.degradation)
    return Cell(f"✓ {text}", "pass", note=roles)


def composition_grid(comparison: Any) -> Table | None:
    """Port x composition case (once, twice, under a trainer): ✓ as declared, ⚠ a documented
    degradation, ✗ not, · not expressible, with the matmuls a step runs and the roles kept;
    each port's lines in its details. None when no port measured a composition."""
    measured = [row for row in comparison.ports if row.compositions]
    if not measured:
        return None
    table = TableBuilder(
        "Composition: the region once, wrapped twice, under a trainer's region",
        [Column("port"), *(Column(CASE_HEADINGS.get(c, c), "center") for c in CASES)],
        caption="✓ the canonical's results, and the instrument shows what the stack "
        "declares · ⚠ a documented degradation (upstream's doing, with the reason in the "
        "row's details) · ✗ not · ·: not expressible. N mm: the matmuls one step runs, in "
        "the forward pass and again in the backward (once: 2 forward + 1 or 2 rerun); under "
        "it, the roles kept.",
        kind="compositions",
    )
    for row in measured:
        by_case = {c.case: c for c in row.compositions}
        lines = _details(compare_matrices.composition_table([row]), row.name,
                         f"composition-{row.name}")  # fmt: skip
        cells = [_composition(by_case[c]) if c in by_case else Cell("") for c in CASES]
        table.add([Cell(row.name, note=row.framework), *cells], key=row.name, details=lines)
    return table.build()
