"""The merged matrix for the terminal (rich) and as Markdown (a CI job summary).

Cells are the run matrix's own (`report.cell`): status and examples, and
below them the worst error/bound. Markdown gets the same text without colour.
"""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..running.runner import Outcome
from ..terminal import style as terminal_style
from ..terminal.markdown import md_cell as _md
from ..terminal.markdown import plain as _plain
from ..terminal.style import state_markup
from ..terminal.suite import CELLS, cell
from .combine import Merged, Row

CAPTION = (
    "✓N: passed on all N examples it ran. A smaller N is never a partial pass: a property "
    "with a fixed list of cases runs it in full, and Hypothesis stops early when a "
    "property's inputs run out. Below it: the worst error/bound over them (1 "
    "would fail). ✗fail, ✗crash, ✗hang @N: failed at its Nth example (crash: its worker died; "
    "hang: it was stopped after the timeout). ref: the canonical port, the reference. skip: "
    "not run there. xfail, xpass: failed, passed where an expectations file expects a "
    "failure. ·: the port did not load. Under each port: its framework · #N, the report it "
    "comes from. time: that port's worker, start to finish. ⚠: reports disagree on this "
    "port, machine, versions and device. V1, V2: the version sets (listed below), where the "
    "reports' versions differ."
)


def describe_versions(versions: dict[str, str]) -> str:
    """A version set in one line: `flax 0.11.2, jax 0.7.0, jaxlib 0.7.0`."""
    return ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) or "no versions recorded"


def cell_markup(outcome: dict[str, Any] | None) -> str:
    """One outcome of a report as the run matrix shows it (rich markup)."""
    if outcome is None:
        return ""
    status = outcome["status"]
    if status not in CELLS:  # a status this version does not know: say it as it is
        return f"[bold red]{escape(status)}[/]"
    examples = outcome.get("examples") or 0
    ratio = _ratio(outcome.get("worst_ratio"))
    return cell(Outcome("", outcome["property"], status, examples=examples, worst_ratio=ratio))


def _ratio(value: Any) -> float | None:
    # JSON spells non-finite floats as strings; the cell shows them as they are.
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _label(row: Row) -> str:
    mark = "[bold yellow]⚠[/] " if row.conflict else ""
    return f"{mark}{escape(row.port)}\n[dim]{escape(row.framework)} · #{row.source}[/]"


def _cells(row: Row, keys: list[str]) -> list[str]:
    if row.state != "available":
        return ["[dim]·[/]"] * len(keys)
    return [cell_markup(row.outcomes.get(key)) for key in keys]


def title(merged: Merged) -> str:
    if len(merged.sources) == 1:
        data = merged.sources[0].data
        examples = data.get("max_examples")
        examples = "the profile's" if examples is None else examples
        return (
            f"remat-conformance · profile {data.get('profile')} · {examples} examples per property"
        )
    verdict = "some failed" if merged.failed else "all passed"
    return f"remat-conformance · {len(merged.sources)} reports merged · {verdict}"


def legend(merged: Merged) -> str:
    """The property columns by their short names, as the run matrix gives them: "(a) init"."""
    names = (key.partition("_") for key in merged.properties)
    return " · ".join(f"({letter}) {name.replace('_', ' ')}" for letter, _, name in names)


def table(merged: Merged) -> Table:
    """One matrix: a heading row per machine and device, then its ports, one row per report."""
    keys = list(merged.properties)
    grid = Table(
        title=title(merged),
        box=box.ASCII2 if terminal_style.OPTIONS.plain else box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,
        title_justify="left",
    )
    grid.add_column("port")  # wraps: a long device heading must not widen the matrix
    for key in keys:
        grid.add_column(f"({key.split('_', 1)[0]})", justify="center", no_wrap=True)
    grid.add_column("time", justify="right", no_wrap=True)
    for group in merged.groups:
        grid.add_row(f"[bold]{escape(group.title)}[/]", *[""] * (len(keys) + 1))
        for row in group.rows:
            time = f"{row.seconds:.0f}s" if row.state == "available" else state_markup(row.state)
            grid.add_row(_label(row), *_cells(row, keys), time)
        grid.add_section()
    return grid


def print_merged(merged: Merged, console: Console) -> None:
    """The matrix, then the machines, the reports, the conflicts and the failures."""
    terminal_style.print_table(console, table(merged))
    terminal_style.print_legend(console, legend(merged), CAPTION)
    console.print("[bold]machines[/]")
    for number, description in merged.machines.items():
        console.print(f"  {number}  {escape(description)}", highlight=False)
    if len(merged.versions) > 1:
        console.print("[bold]versions[/]")
        for number, versions in merged.versions.items():
            console.print(f"  {number}  {escape(describe_versions(versions))}", highlight=False)
    console.print("[bold]reports[/]")
    for source in merged.sources:
        verdict = "[bold red]failed[/]" if source.failed else "[green]passed[/]"
        machine = merged.machine_of[source.number]
        line = f"  #{source.number}  {escape(source.path)} ({machine}{_mutants(source)}): "
        console.print(line + verdict, highlight=False)
    for conflict in merged.conflicts:
        console.print(f"[bold yellow]conflict[/] {escape(_conflict_text(merged, conflict))}")
    for line in failures(merged):
        console.print(f"[bold red]✗[/] {escape(line)}", highlight=False)


def _mutants(source) -> str:
    score = source.data.get("mutation_score")
    return f", mutants killed {score['killed']}/{score['total']}" if score else ""


def _conflict_text(merged: Merged, conflict) -> str:
    rows = [r for g in merged.groups if g.title == conflict.group for r in g.rows]
    rows = [r for r in rows if r.port == conflict.port]
    parts = []
    for key in conflict.differs:
        if key == "state":
            said = ", ".join(f"{r.state} in #{r.source}" for r in rows)
        else:
            said = ", ".join(
                f"{r.outcomes[key]['status']} in #{r.source}" for r in rows if key in r.outcomes
            )
        parts.append(f"{key}: {said}")
    return f"{conflict.port} on {conflict.group}: " + "; ".join(parts)


def failures(merged: Merged) -> list[str]:
    """One line per failure: what failed, in which report, its message's first line, replay."""
    lines = []
    for source in merged.sources:
        if source.data.get("canonical_failure"):
            first = source.data["canonical_failure"].splitlines()[0]
            lines.append(f"#{source.number}: the canonical port failed: {first}")
        for port in source.ports:
            state = port.get("state", "available")
            if state not in ("available", "unavailable"):
                reason = (str(port.get("reason") or "").splitlines() or [""])[0]
                lines.append(f"#{source.number} {port['name']}: {state}: {reason}")
            for outcome in port["outcomes"]:
                if outcome["status"] in ("fail", "crashed", "timeout"):
                    first = (str(outcome.get("message") or "").splitlines() or [""])[0]
                    replay = outcome.get("replay")
                    tail = f" (replay: {replay})" if replay else ""
                    heading = f"#{source.number} {port['name']} · {outcome['property']}"
                    lines.append(f"{heading}: {outcome['status']}: {first}{tail}")
        for mutant in source.data.get("mutants") or []:
            status = mutant.get("status")
            if status not in ("killed", "unavailable"):
                lines.append(f"#{source.number} mutant {mutant.get('name')}: {status}")
    return lines


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------


def markdown(merged: Merged) -> str:
    """The same matrix as Markdown: a heading row per machine and device, then the lists."""
    keys = list(merged.properties)
    lines = [f"## {_md(title(merged))}", ""]
    header = ["port", *(f"({key.split('_', 1)[0]})" for key in keys), "time"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("| --- | " + " | ".join(":-:" for _ in keys) + " | --: |")
    for group in merged.groups:
        lines.append(f"| **{_md(group.title)}** |" + " |" * (len(keys) + 1))
        for row in group.rows:
            mark = "⚠ " if row.conflict else ""
            label = f"{mark}{_md(row.port)}<br>{_md(row.framework)} · #{row.source}"
            cells = [_md(_plain(cell)) for cell in _cells(row, keys)]
            time = f"{row.seconds:.0f}s" if row.state == "available" else _md(row.state)
            lines.append("| " + " | ".join([label, *cells, time]) + " |")
    lines += ["", _md(legend(merged)), "", _md(CAPTION), "", "**Machines**", ""]
    for number, description in merged.machines.items():
        lines.append(f"- **{number}**: {_md(description)}")
    if len(merged.versions) > 1:
        lines += ["", "**Versions**", ""]
        for number, versions in merged.versions.items():
            lines.append(f"- **{number}**: {_md(describe_versions(versions))}")
    lines += ["", "**Reports**", ""]
    for source in merged.sources:
        verdict = "**failed**" if source.failed else "passed"
        machine = merged.machine_of[source.number]
        path = _md(source.path)
        lines.append(f"- **#{source.number}** `{path}` ({machine}{_mutants(source)}): {verdict}")
    if merged.conflicts:
        lines += ["", "**Conflicts**", ""]
        lines += [f"- ⚠ {_md(_conflict_text(merged, c))}" for c in merged.conflicts]
    found = failures(merged)
    if found:
        lines += ["", "**Failures**", ""]
        lines += [f"- ✗ {_md(line)}" for line in found]
    return "\n".join(lines) + "\n"
