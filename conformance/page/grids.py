"""The report's two grids, renderer-free: the conformance matrix and the policy matrix.

A `Grid` is a table of ports (rows) by properties or policies (columns) whose
cells are compact: a mark that reads without colour (✓, ✗, ref, —, ⚠) and a
short figure, with a `fill` (0 to 1) that HTML draws as a small bar (the
worst error over its bound). Each row carries its details, a table of one line
per cell (examples, worst case, seconds, message, replay command; or a policy's
spelling or reason, roles, KiB, matmuls, agreement, expectation, degradations),
which HTML shows on demand in a `<details>` element and Markdown as a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..tables.model import Cell as TableCell
from ..tables.model import Column, Table, TableBuilder
from ..tables.numbers import number, ratio
from .tables import FAILING

#: Marks of a run outcome's status: short, and none relies on colour.
MARKS = {
    "pass": "✓",
    "reference": "ref",
    "skip": "—",
    "xfail": "✓x",
    "fail": "✗",
    "crashed": "✗",
    "timeout": "✗",
    "xpass": "✗",
}
WORDS = {
    "pass": "pass",
    "reference": "reference: the canonical port",
    "skip": "skipped: could not run",
    "xfail": "expected failure (an expectations file)",
    "fail": "FAIL",
    "crashed": "CRASH",
    "timeout": "HANG",
    "xpass": "XPASS: a stale expected failure",
}


@dataclass
class Cell:
    """One compact cell. `tone`: good, bad, warn, muted or "" (CSS classes, never alone:
    the mark says the same); `words`: the whole verdict, for a tooltip and screen readers;
    `fill`: the bar's length (0 to 1), None for no bar; `anchor`: its line in the details."""

    mark: str
    tone: str
    words: str
    short: str = ""
    fill: float | None = None
    anchor: str = ""


@dataclass
class GridRow:
    """A port's row: its leading cells (name, framework...), its compact cells, its trailing
    cells, and its details (a header and one line of strings per cell)."""

    key: str
    lead: list[str]
    cells: list[Cell]
    trail: list[str] = field(default_factory=list)
    summary: str = ""
    detail_header: list[str] = field(default_factory=list)
    details: list[list[str]] = field(default_factory=list)
    detail_anchors: list[str] = field(default_factory=list)
    code_columns: tuple[int, ...] = ()  # detail columns shown as code (replay commands)

    @property
    def failed(self) -> bool:
        return any(c.tone == "bad" for c in self.cells)


@dataclass
class Grid:
    """A titled grid. `kind` names it (`matrix`, `policies`): rows get the id `<kind>-<key>`."""

    title: str
    kind: str
    lead_header: list[str]
    columns: list[str]
    column_titles: list[str] = field(default_factory=list)
    trail_header: list[str] = field(default_factory=list)
    rows: list[GridRow] = field(default_factory=list)
    caption: str = ""
    legend: list[tuple[str, str, str]] = field(default_factory=list)  # (mark, tone, meaning)

    @property
    def keys(self) -> list[str]:
        return [row.key for row in self.rows]


def slug(text: str) -> str:
    """`text` as an id fragment: letters, digits, `-` and `_`."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)


def _worst(value: Any) -> str:
    # Two digits: a compact cell.
    return ratio(value, digits=2)


# ---------------------------------------------------------------------------
# The conformance matrix (a run report)
# ---------------------------------------------------------------------------


def outcome(port: str, outcome: dict[str, Any]) -> Cell:
    """A run outcome as a compact cell: the mark, the worst error/bound and its bar."""
    status = outcome["status"]
    mark = MARKS.get(status, "?")
    worst = number(outcome.get("worst_ratio"))
    examples = outcome.get("examples", 0)
    anchor = f"case-{slug(port)}-{slug(outcome['property'])}"
    words = WORDS.get(status, status)
    if status in ("skip", "reference"):
        return Cell(mark, "muted", words, anchor=anchor)
    if status in FAILING:
        words += f" at example {examples}"
    else:
        words += f" · {examples} examples"
    if worst is not None:
        words += f" · worst error/bound {_worst(worst)}"
    tone = "bad" if status in FAILING else ("warn" if status == "xfail" else "good")
    fill = None if worst is None else (1.0 if worst != worst else max(0.0, min(worst, 1.0)))
    return Cell(mark, tone, words, _worst(worst), fill, anchor)


def run_grid(run: dict[str, Any]) -> Grid:
    """Ports by properties: one compact cell each, the details of each port's row."""
    properties = list(run.get("properties") or {})
    grid = Grid(
        title=f"Conformance matrix · profile {run.get('profile', '?')} · "
        f"{run.get('max_examples', '?')} examples per property",
        kind="matrix",
        lead_header=["port"],
        columns=[f"({key.split('_', 1)[0]})" for key in properties],
        column_titles=[
            f"({key.split('_', 1)[0]}) {(run.get('properties') or {}).get(key, key)}"
            for key in properties
        ],
        trail_header=["s"],
        caption="Each cell: the verdict's mark, the worst error over its bound across the "
        "examples (a bar: full at 1, where it would fail). Open a port's details for the "
        "examples, the worst case, the failure's message and the command that replays it.",
        legend=[
            ("✓", "good", "pass"),
            ("✗", "bad", "fail, crash, hang or xpass"),
            ("ref", "muted", "the canonical port (the reference)"),
            ("—", "muted", "skipped"),
            ("✓x", "warn", "expected failure"),
        ],
    )
    for port in run["ports"]:
        name = port["name"]
        seconds = number(port.get("seconds"))
        time = "" if seconds is None else f"{seconds:.0f}"
        if port.get("state", "available") != "available":
            cell = Cell("✗", "bad", f"{port.get('state')}: {port.get('reason', '')}", anchor="")
            row = GridRow(name, [name], [cell] * len(properties), [time])
            row.summary = f"{name} · {port.get('state')}: {port.get('reason', '')}"
            grid.rows.append(row)
            continue
        by_key = {o["property"]: o for o in port["outcomes"]}
        cells = [
            outcome(name, by_key[k]) if k in by_key else Cell("", "", "not run") for k in properties
        ]
        evidence = (port.get("environment") or {}).get("evidence") or {}
        framework = port.get("framework", "")
        lead = name + (" (self-reported)" if evidence.get("measured_by") == "port" else "")
        row = GridRow(name, [lead], cells, [time], code_columns=(6,))
        failed = [o for o in port["outcomes"] if o["status"] in FAILING]
        row.summary = (
            f"{name} ({framework}) · "
            + (f"{len(failed)} ✗ failed" if failed else "every property passed")
            + f" · {time} s"
        )
        row.detail_header = [
            "property",
            "verdict",
            "examples",
            "worst error/bound",
            "seconds",
            "message",
            "replay",
        ]
        for key in properties:
            o = by_key.get(key)
            if o is None:
                continue
            message = (o.get("message") or "").strip()
            row.details.append(
                [
                    f"({key.split('_', 1)[0]}) {(run.get('properties') or {}).get(key, key)}",
                    f"{MARKS.get(o['status'], '?')} {WORDS.get(o['status'], o['status'])}",
                    str(o.get("examples", "")),
                    _worst(o.get("worst_ratio")) or "-",
                    f"{number(o.get('seconds')) or 0:.1f}",
                    message if len(message) <= 1200 else message[:1200] + " …",
                    o.get("replay", ""),
                ]
            )
            row.detail_anchors.append(f"case-{slug(name)}-{slug(key)}")
        grid.rows.append(row)
    return grid


# ---------------------------------------------------------------------------
# The policy matrix (a compare report)
# ---------------------------------------------------------------------------


def policy_cell(port: str, cell: dict[str, Any]) -> Cell:
    """A compare policy cell: expressible or not, saved roles and KiB, backward matmuls,
    agreement with the canonical, documented degradations."""
    anchor = f"policy-{slug(port)}-{slug(cell['policy'])}"
    degraded = bool(cell.get("degradations"))
    if not cell.get("expressible"):
        words = f"not expressible: {cell.get('spelling', '')}"
        if degraded:
            words += " · documented degradation: " + "; ".join(cell["degradations"])
        return Cell("—⚠" if degraded else "—", "muted", words, anchor=anchor)
    kib = number(cell.get("kib"))
    matmuls = cell.get("backward_matmuls")
    short = " ".join(cell.get("roles") or []) or "∅"
    if kib is not None:
        short += f" · {kib:.3g} KiB"
    if matmuls is not None:
        short += f" · {matmuls} mm"
    if cell.get("error"):
        return Cell("✗", "bad", f"error: {cell['error']}", "error", anchor=anchor)
    if cell.get("agrees") is False:
        ratio = number(cell.get("worst_ratio"))
        return Cell(
            "✗", "bad", f"differs from the canonical: error/bound {ratio:.3g}", short, 1.0, anchor
        )
    if cell.get("expected"):
        return Cell("✗", "bad", f"not as expected: {cell['expected']}", short, anchor=anchor)
    if degraded:
        words = "as measured, a documented degradation: " + "; ".join(cell["degradations"])
        return Cell("⚠", "warn", words, short, anchor=anchor)
    return Cell(
        "✓", "good", f"as expected, agrees with the canonical ({short})", short, None, anchor
    )


def _held(words: str) -> str:
    # "the jax instrument's, declared by the suite (path)" -> "the suite: path"
    if ", declared by the suite (" in words:
        return "the suite: " + words.split(", declared by the suite (", 1)[1].rstrip(")")
    if ", declared by the port itself (" in words:
        return "the port itself (" + words.split(", declared by the port itself (", 1)[1]
    return words


def policy_grid(compare: dict[str, Any], runs: Sequence[dict[str, Any]] = ()) -> Grid | None:
    """Ports by remat policies, from compare's `policies`; None when the report has none.
    `runs`: run reports, whose `environment.evidence` says whose expectations each port was
    held to (compare says only who measured)."""
    if not any(r.get("policies") for r in compare["ports"]):
        return None
    rows = compare["ports"]
    names = list(dict.fromkeys(c["policy"] for r in rows for c in r["policies"]))
    evidence: dict[str, dict[str, Any]] = {}
    for run in runs:
        for port in run.get("ports") or []:
            found = (port.get("environment") or {}).get("evidence")
            if found:
                evidence[port["name"]] = found
    grid = Grid(
        title="Policy matrix: what each port expresses, keeps and reruns under each remat policy",
        kind="policies",
        lead_header=["port"],
        columns=names,
        column_titles=names,
        trail_header=["held to", "evidence"],
        caption="Each cell: ✓ as expected and equal to the canonical port under the same policy "
        "(output and VJP within the rigorous bound) · ⚠ a documented degradation (shown as "
        "such, never as a pass) · ✗ differs, errs or is not what its expectation says · — not "
        "expressible (the reason in the details). Figures: the saved roles (x, d1 = x@W1, "
        "h = d1 + b1, a = relu(h), mask, y), the KiB kept and the backward pass's matmuls. "
        "held to: whose expectations the port's records were checked against; evidence: who "
        "measured them (the suite's instrument, or the port itself).",
        legend=[
            ("✓", "good", "as expected"),
            ("⚠", "warn", "documented degradation"),
            ("✗", "bad", "differs, errs or unexpected"),
            ("—", "muted", "not expressible"),
        ],
    )
    for row in rows:
        name = row["name"]
        by_policy = {c["policy"]: c for c in row.get("policies") or []}
        if row.get("state") != "available" or row.get("error"):
            why = row.get("error") or f"{row.get('state')}: {row.get('reason', '')}"
            cells = [Cell("✗", "bad", f"not measured: {why}") for _ in names]
        elif not by_policy:
            why = "compare measured no policy on this row (a comparison row, not a port)"
            cells = [Cell("·", "muted", why) for _ in names]
        else:
            cells = [
                policy_cell(name, by_policy[p]) if p in by_policy else Cell("", "", "not measured")
                for p in names
            ]
        found = evidence.get(name, {})
        who = found.get("measured_by") or row.get("measured_by") or ""
        measured = {"suite": "the suite's instrument", "port": "self-reported by the port"}
        held = _held(found.get("expectations", "")) or (
            "see the run report" if not runs else "none written"
        )
        grid_row = GridRow(name, [name], cells, [held, measured.get(who, who or "-")])
        bad = sum(c.tone == "bad" for c in cells)
        warn = sum(c.tone == "warn" for c in cells)
        grid_row.summary = (
            f"{name} · {cells[0].words}"
            if cells and cells[0].mark in ("·", "✗") and not by_policy
            else f"{name} · "
            + f"{sum(c.tone == 'good' for c in cells)} ✓ · {warn} ⚠ · {bad} ✗ · "
            + f"{sum(c.tone == 'muted' for c in cells)} not expressible"
        )
        grid_row.detail_header = [
            "policy",
            "verdict",
            "spelling, or why not",
            "saved roles",
            "KiB",
            "backward matmuls",
            "canonical: error/bound",
            "documented degradations",
        ]
        for policy in names:
            cell = by_policy.get(policy)
            if cell is None:
                continue
            shown = policy_cell(name, cell)
            kib, ratio = number(cell.get("kib")), number(cell.get("worst_ratio"))
            grid_row.details.append(
                [
                    policy,
                    f"{shown.mark} {shown.words.split(' (', 1)[0]}",
                    cell.get("spelling", ""),
                    ", ".join(
                        f"{r} ({cell['memory'][r]})"
                        if (cell.get("memory") or {}).get(r) == "host"
                        else r
                        for r in cell.get("roles") or []
                    )
                    or "-",
                    "-" if kib is None else f"{kib:.3g}",
                    "-" if cell.get("backward_matmuls") is None else str(cell["backward_matmuls"]),
                    "-" if ratio is None else _worst(ratio),
                    "; ".join(cell.get("degradations") or []) or "-",
                ]
            )
            grid_row.detail_anchors.append(shown.anchor)
        grid.rows.append(grid_row)
    return grid


# ---------------------------------------------------------------------------
# As plain tables (Markdown): the marks, then the details of the rows with a ✗
# ---------------------------------------------------------------------------

#: A grid cell's tone -> the table model's mark.
TONE_MARKS = {"good": "pass", "bad": "fail", "warn": "warn", "muted": "muted", "": ""}


def as_table(grid: Grid) -> Table:
    """The grid as a table of marks (with the worst error/bound or the policy's figures),
    its legend and caption under it."""
    legend = " · ".join(f"{mark} {meaning}" for mark, _, meaning in grid.legend)
    found = TableBuilder(
        grid.title,
        [*grid.lead_header, *grid.columns, *grid.trail_header],
        caption=f"{legend}. {grid.caption}",
        kind=grid.kind,
    )
    for row in grid.rows:
        cells = [
            TableCell(f"{c.mark} {c.short}".strip(), TONE_MARKS[c.tone], title=c.words)
            for c in row.cells
        ]
        found.add([*row.lead, *cells, *row.trail], key=row.key)
    return found.build()


def details_table(row: GridRow) -> Table:
    """A row's details: one line per cell."""
    found = TableBuilder(row.summary or row.key, [Column(h) for h in row.detail_header])
    for anchor, line in zip(row.detail_anchors, row.details, strict=True):
        found.add(line, key=anchor)
    return found.build()
