"""compare's policy and composition matrices in full: a heading row per port, a row per
policy (or composition case) with its spelling, what it keeps, its matmuls, its agreement with
the canonical port and its verdict in words. The page shows them in each grid row's details
(`compare_grids`), the JSON holds their data (`comparison.policy_matrix`,
`comparison.composition_matrix`, which measure them).

A cell is a `PolicyCell` or a `CompositionCell` (or one `comparison.restore` made): read by
its fields and its `failed` verdict, so that this floor needs nothing from `comparison`.
"""

from __future__ import annotations

from typing import Any

from ..model import Cell, Column, Table, TableBuilder

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
                    _policy_saved(cell),
                    matmuls,
                    _agreement(cell),
                    _policy_verdict_cell(cell),
                ],
                key=f"{row.name} {cell.policy}",
            )
    return table.build()


def _policy_saved(cell: Any) -> Cell:
    if not cell.expressible or cell.error:
        return Cell("-", "muted")
    roles = ", ".join(
        f"{r}<{cell.memory[r]}>" if cell.memory.get(r) == "host" else r for r in cell.roles
    )
    return Cell(f"{{{roles}}}", note=f"{cell.kib:.2f} KiB")


def _agreement(cell: Any) -> Cell:
    if cell.agrees is None:
        return Cell("-", "muted")
    return Cell("equal", "pass") if cell.agrees else Cell(f"off x{cell.worst_ratio:.2g}", "fail")


def policy_verdict(cell: Any) -> str:
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


def _policy_verdict_cell(cell: Any) -> Cell:
    if not cell.expressible:
        mark = "muted"
    elif cell.error or cell.expected:
        mark = "fail"
    else:
        mark = "warn" if cell.degradations else "pass"
    return Cell(policy_verdict(cell), mark)


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
                    _composition_saved(cell),
                    _count(cell.forward_matmuls, cell),
                    _count(cell.rerun_matmuls, cell),
                    _agreement(cell),
                    composition_verdict(cell),
                ],
                key=f"{row.name} {cell.case}",
            )
    return table.build()


def _composition_saved(cell: Any) -> Cell:
    if not cell.expressible or cell.error or cell.roles is None:
        return Cell("-", "muted")
    return Cell("{" + ", ".join(cell.roles) + "}", note=f"{cell.kib:.2f} KiB")


def _count(value: int | None, cell: Any) -> Cell:
    if not cell.expressible or cell.error or value is None:
        return Cell("-", "muted")
    return Cell(str(value))


#: Who measured a record, in words (`checking.provenance`).
_MEASURED = {"suite": "the suite's instrument", "port": "the port (self-reported)"}


def composition_verdict(cell: Any) -> Cell:
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
