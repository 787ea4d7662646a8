"""compare's randomness-and-state matrix: a heading per port, a row per API variant of the
stateful block, its replay, stream and updates as declared and as measured
(`comparison.state_matrix`), who declared and who measured, the fix and the repro script.

A cell reads ✓ where the measurement is the canonical's and declared so, ⚠ where it departs
as declared (a documented degradation, with its upstream reference), ✗ where it contradicts
the declaration (property (l)'s message)."""

from __future__ import annotations

from typing import Any

from ..model import Cell, Column, Table, TableBuilder

CAPTION = (
    "replay: the share of the dropout mask the recompute changed (0%: it replays the forward's "
    "mask) · stream: whether one step leaves the RNG state as it does without the checkpoint · "
    "updates: how many of the canonical's running-statistics updates one step makes · ✓ the "
    "canonical's, ⚠ a departure declared with its upstream reference, ✗ against the "
    "declaration (property (l)) · fix: the variant that does it right · repro: the script "
    "that shows it upstream"
)
_MEASURED = {"suite": "the suite (its stack's state_step)", "port": "the port (self-reported)"}


def state_table(rows: list[Any]) -> Table | None:
    """Ports by API variant (rows: `PortComparison`s); None where no port offers the block."""
    measured = [row for row in rows if getattr(row, "states", None)]
    if not measured:
        return None
    table = TableBuilder(
        "randomness and state: the block with dropout and BatchNorm under the checkpoint",
        [
            # A terminal too narrow for all six keeps the three measured parts (at 100
            # columns it kept the replay alone: torch's two updates were left out).
            Column("variant", wrap=True),
            Column("replay", wrap=True, drop=-1),
            Column("stream", wrap=True, drop=-1),
            Column("updates", wrap=True, drop=-1),
            Column("declared, measured", wrap=True, short="who", drop=2),
            Column("fix, repro", wrap=True, short="fix", drop=1),
        ],
        caption=CAPTION,
        kind="state",
    )
    for row in measured:
        table.heading(row.name, key=row.name)
        for cell in row.states:
            table.add(_cells(cell), key=f"{row.name} {cell.variant}")
    return table.build()


def _cells(cell: Any) -> list[Cell | str]:
    variant = Cell(cell.variant, note=cell.spelling)
    if cell.error:
        return [variant, Cell(f"error: {cell.error}", "fail"), "-", "-", _who(cell), "-"]
    fix = "; ".join(p for p in (cell.fix, cell.repro) if p) or "-"
    return [variant, replay(cell), stream(cell), updates(cell), _who(cell), Cell(fix, "muted")]


def _degradation(cell: Any, part: str) -> str:
    found = [d for d in cell.degradations or [] if d.startswith(f"{part}: ")]
    return found[0].split(": ", 1)[1] if found else ""


def _who(cell: Any) -> Cell:
    measured = _MEASURED.get(cell.measured_by, cell.measured_by or "?")
    return Cell(f"declared {cell.declared_by}", note=f"measured by {measured}")


def replay(cell: Any) -> Cell:
    """The replay part: the share of the mask the recompute changed, against the declaration."""
    if cell.replay:
        return Cell(cell.replay, "fail")
    if cell.changed is None:
        return Cell(cell.unobserved or "not observable", "muted")
    seen = f"{cell.changed:.0%} changed ({cell.recomputes} recompute(s) seen)"
    if not cell.declared_replay:
        return Cell(f"fresh mask: {seen}", "warn", note=_degradation(cell, "replay"))
    return Cell(f"replayed: {seen}", "pass")


def stream(cell: Any) -> Cell:
    """The stream part: whether the checkpoint moved the RNG state."""
    if cell.stream:
        return Cell(cell.stream, "fail")
    if cell.moved is None:
        return Cell(cell.unobserved or "not observable", "muted")
    if cell.moved:
        return Cell("moved", "warn", note=_degradation(cell, "stream"))
    return Cell("kept", "pass")


def updates(cell: Any) -> Cell:
    """The state part: the canonical's updates one step makes."""
    if cell.state:
        return Cell(cell.state, "fail")
    seen = "?" if cell.updates is None else str(cell.updates)
    if cell.declared_updates != 1:
        return Cell(f"{seen} updates", "warn", note=_degradation(cell, "updates"))
    return Cell(f"{seen} update", "pass")
