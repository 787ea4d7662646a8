"""The page's compact grids, from the run and compare reports: a row per port, a short cell per
column, each row's full lines one click away (its details).

- `summary`: at the top, one row per port (a framework's way to checkpoint): conforms or not,
  remat policies honoured out of those it declares, and the cost of wrapping its region twice;
- `policy_grid`: port x remat policy (compare's policy matrix, one cell a policy);
- `composition_grid`: port x composition case (once, twice, under a trainer's region);
- `mutants`: the mutation score in one line, rows only for the mutants not killed.

A cell says its verdict in its text (✓ ✗ ⚠ ·), its mark only colours it; its details' lines
are the row's cells in order, so a cell links to its line (`tables.render.html`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from implementations.composition import CASES
from implementations.policies import POLICY_NAMES

from ..comparison import composition_matrix, policy_matrix
from ..tables.kinds import outcomes
from ..tables.kinds import run as run_tables
from ..tables.model import Cell, Column, Paragraph, Table, TableBuilder

#: A composition case's column heading.
CASE_HEADINGS = {"once": "once", "twice": "twice", "under_trainer": "under a trainer"}


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


def policies_cell(cells: Sequence[policy_matrix.PolicyCell], name: str) -> Cell:
    """Policies honoured out of those the port declares (a documented degradation is
    declared, so honoured, and said under it)."""
    if not cells:
        return Cell("-", "muted", title="no policy measured (no compare report)")
    declared = [c for c in cells if c.expressible]
    honoured = [c for c in declared if not policy_matrix.failed(c)]
    degraded = sum(bool(c.degradations) for c in honoured)
    note = f"{degraded} degraded (documented)" if degraded else ""
    link = f"#policies-{name}"
    text = f"{len(honoured)}/{len(declared)}"
    if len(honoured) < len(declared):
        return Cell(f"✗ {text}", "fail", note=note, link=link)
    return Cell(f"✓ {text}", "warn" if degraded else "pass", note=note, link=link)


def _matmuls(cell: composition_matrix.CompositionCell) -> int | None:
    if cell.forward_matmuls is None or cell.rerun_matmuls is None:
        return None
    return cell.forward_matmuls + cell.rerun_matmuls


def twice_cell(cells: Sequence[composition_matrix.CompositionCell], name: str) -> Cell:
    """What wrapping the region twice costs over once: matmuls a step runs (forward and
    rerun), and KiB kept; free when neither grows."""
    by_case = {c.case: c for c in cells}
    once, twice = by_case.get("once"), by_case.get("twice")
    link = f"#compositions-{name}"
    if once is None or twice is None:
        return Cell("-", "muted", title="no composition measured (no compare report)")
    if not twice.expressible:
        return Cell("· not expressible", "muted", title=twice.spelling, link=link)
    if composition_matrix.failed(twice):
        return Cell("✗ " + (twice.error or twice.expected or "differs")[:40], "fail", link=link)
    before, after = _matmuls(once), _matmuls(twice)
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


def _details(lines: Table, title: str, prefix: str) -> Table:
    """A matrix's lines for one port (its heading row dropped), as a row's details; a line's
    key ("pytorch full") becomes `prefix` and its case ("policy-pytorch-full")."""
    rows = tuple(replace(r, key=f"{prefix}-{r.key.split(' ', 1)[-1]}") for r in lines.rows
                 if not r.heading)  # fmt: skip
    return Table(title, lines.columns, rows)


def _policy(cell: policy_matrix.PolicyCell) -> Cell:
    roles = "{" + ",".join(cell.roles) + "}" if cell.roles else ""
    if not cell.expressible:
        return Cell("·", "muted", title=f"not expressible: {cell.spelling}")
    if cell.error:
        return Cell("✗ error", "fail", title=cell.error)
    if policy_matrix.failed(cell):
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
        f"the roles kept ({policy_matrix.ROLES_LEGEND}).",
        kind="policies",
    )
    for row in measured:
        by_policy = {c.policy: c for c in row.policies}
        said = (held or {}).get(row.name, "")
        lines = _details(policy_matrix.policy_table([row]), f"{row.name} · {said}".rstrip(" ·"),
                         f"policy-{row.name}")  # fmt: skip
        cells = [_policy(by_policy[p]) if p in by_policy else Cell("") for p in POLICY_NAMES]
        table.add([Cell(row.name, note=row.framework), *cells], key=row.name, details=lines)
    return table.build()


def _composition(cell: composition_matrix.CompositionCell) -> Cell:
    if not cell.expressible:
        return Cell("·", "muted", title=f"not expressible: {cell.spelling}")
    if cell.error:
        return Cell("✗ error", "fail", title=cell.error)
    matmuls = _matmuls(cell)
    text = "" if matmuls is None else f"{matmuls} mm"
    roles = "{" + ",".join(cell.roles or []) + "}"
    if composition_matrix.failed(cell):
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
        lines = _details(composition_matrix.composition_table([row]), row.name,
                         f"composition-{row.name}")  # fmt: skip
        cells = [_composition(by_case[c]) if c in by_case else Cell("") for c in CASES]
        table.add([Cell(row.name, note=row.framework), *cells], key=row.name, details=lines)
    return table.build()


def mutants(run: Mapping[str, Any]) -> list[Table | Paragraph]:
    """The mutation score in one line; a row for each mutant not killed (survived, crashed,
    timed out); the ones that could not run named in one line; the killed ones one click
    away. Empty without a mutation run."""
    found = run.get("mutants")
    full = run_tables.mutants(dict(run))
    if found is None or full is None:
        return []
    counted = [m for m in found if m["status"] != "unavailable"]
    killed = [m for m in counted if m["status"] == "killed"]
    missed = [m for m in counted if m["status"] != "killed"]
    score = f"Mutation score: {len(killed)}/{len(counted)} killed"
    blocks: list[Table | Paragraph] = []
    if missed:
        said = ", ".join(f"{m['name']} {m['status']}" for m in missed)
        blocks.append(Paragraph(f"{score} · not killed: {said}", "fail"))
        blocks.append(_only(full, {m["name"] for m in missed}, "Mutants not killed", False))
    else:
        blocks.append(Paragraph(f"{score}: each rejected by a property", "pass"))
    unavailable = [m["name"] for m in found if m["status"] == "unavailable"]
    if unavailable:
        blocks.append(
            Paragraph(
                f"{len(unavailable)} not run (their port did not load; not counted): "
                + ", ".join(unavailable)
            )
        )
    if killed:
        blocks.append(
            _only(full, {m["name"] for m in killed}, f"The {len(killed)} killed mutants", True)
        )
    return blocks


def _only(table: Table, keys: set[str], title: str, collapsed: bool) -> Table:
    rows = tuple(r for r in table.rows if r.key in keys)
    return replace(table, title=title, rows=rows, collapsed=collapsed)
