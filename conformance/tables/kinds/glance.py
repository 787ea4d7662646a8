"""The page's "At a glance" (`summary`), from the run and compare reports: at the top, one
row per port (a framework's way to checkpoint): conforms or not, remat policies honoured out of
those it declares, and the cost of wrapping its region twice; each cell links to the grid
that says more (the run's matrix, compare's grids: `compare_grids`).

A cell says its verdict in its text (✓ ✗ ⚠ ·), its mark only colours it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model import Cell, Column, Table, TableBuilder
from . import outcomes
from . import run as run_tables
from .compare_grids import step_matmuls

# ---------------------------------------------------------------------------
# One port's facts, each from the report that measured it
# ---------------------------------------------------------------------------


def conformance_cell(port: Mapping[str, Any] | None) -> Cell:
    """✓ conforms, ✗ and the failing properties' columns, or why it did not run."""
    if port is None:
        return Cell("-", "muted", title="not in a run report")
    if run_tables.not_installed(port):
        return Cell("○ not installed", "not-installed", note=run_tables.install_command(port))
    if port.get("state", "available") != "available":
        return Cell(f"✗ {port.get('state')}", "fail", note=port.get("reason", "")[:80])
    failing = [
        outcomes.column(o["property"]) for o in port["outcomes"] if o["status"] in outcomes.FAILING
    ]
    if failing:
        return Cell("✗ " + " ".join(failing), "fail", link=f"#matrix-{port['name']}")
    return Cell("✓ conforms", "pass", link=f"#matrix-{port['name']}")


#: Why a port has no compare figures: no compare report was given, or the port's framework was
#: not installed where compare ran (a report from an `[all]` venv has no paddle row).
_UNMEASURED = "(no compare report, or not installed where compare ran)"


def policies_cell(cells: Sequence[Any], name: str) -> Cell:
    """Policies honoured out of those the port declares (a documented degradation is
    declared, so honoured, and said under it)."""
    if not cells:
        return Cell("-", "muted", title=f"no policy measured {_UNMEASURED}")
    declared = [c for c in cells if c.expressible]
    honoured = [c for c in declared if not c.failed]
    degraded = sum(bool(c.degradations) for c in honoured)
    note = f"{degraded} degraded (documented)" if degraded else ""
    link = f"#policies-{name}"
    text = f"{len(honoured)}/{len(declared)}"
    if len(honoured) < len(declared):
        return Cell(f"✗ {text}", "fail", note=note, link=link)
    return Cell(f"✓ {text}", "warn" if degraded else "pass", note=note, link=link)


def twice_cell(cells: Sequence[Any], name: str) -> Cell:
    """What wrapping the region twice costs over once: matmuls a step runs (forward and
    rerun), and KiB kept; free when neither grows."""
    by_case = {c.case: c for c in cells}
    once, twice = by_case.get("once"), by_case.get("twice")
    link = f"#compositions-{name}"
    if once is None or twice is None:
        return Cell("-", "muted", title=f"no composition measured {_UNMEASURED}")
    if not twice.expressible:
        return Cell("· not expressible", "muted", title=twice.spelling, link=link)
    if twice.failed:
        return Cell("✗ " + (twice.error or twice.expected or "differs")[:40], "fail", link=link)
    before, after = step_matmuls(once), step_matmuls(twice)
    if before is None or after is None or once.kib is None or twice.kib is None:
        return Cell("?", "warn", title="not measured", link=link)
    extra, kib = after - before, twice.kib - once.kib
    costs = ([f"+{extra} mm"] if extra else []) + ([f"+{kib:.2f} KiB"] if kib > 0.005 else [])
    note = "documented" if twice.degradation else ""
    if not costs:
        return Cell("✓ free", "pass", note=note, link=link)
    return Cell(" ".join(costs), "warn", note=note, title=twice.degradation, link=link)


# ---------------------------------------------------------------------------
# The grids
# ---------------------------------------------------------------------------


def _compare_rows(compares: Sequence[Any]) -> dict[str, Any]:
    """Port name -> its compare row (`PortComparison`), the last report's where several."""
    return {row.name: row for comparison in compares for row in comparison.ports}


def summary(runs: Sequence[Mapping[str, Any]], compares: Sequence[Any]) -> Table | None:
    """One row per port the reports name: conforms, policies honoured, wrapping twice.

    `runs`: `run --json` documents; `compares`: `Comparison`s (`comparison.restore`)."""
    ported = {p["name"]: p for run in runs for p in run["ports"]}
    rows = _compare_rows(compares)
    names = list(dict.fromkeys([*ported, *(n for n, r in rows.items() if r.policies)]))
    if not names:
        return None
    table = TableBuilder(
        "At a glance: what each port does",
        [
            Column("port"),
            Column("conforms"),
            Column("policies honoured", short="policies"),
            Column("wrapped twice", short="twice"),
        ],
        caption="One row per port (a framework's way to checkpoint: its framework under its "
        "name). conforms: ✓ every property passed, or ✗ and the properties that failed "
        "(the grid below). policies honoured: of the remat policies the port declares, "
        "those that give the canonical's results and keep what its stack declares (⚠ "
        "a documented degradation among them). wrapped twice: what wrapping the region "
        "twice costs over once, in matmuls a step runs (forward and rerun) and KiB kept; "
        "free when neither grows. -: no report measured it; ○: not installed.",
        kind="summary",
    )
    for name in names:
        port, row = ported.get(name), rows.get(name)
        framework = (port or {}).get("framework") or getattr(row, "framework", "")
        table.add(
            [
                Cell(name, note=framework),
                conformance_cell(port),
                policies_cell(getattr(row, "policies", None) or [], name),
                twice_cell(getattr(row, "compositions", None) or [], name),
            ],
            key=name,
        )
    return table.build()
