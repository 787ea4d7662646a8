"""Show a suite run: the side-by-side matrix, the failures, the mutation score, the time."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

from .mutation import score
from .properties import PROPERTIES
from .suite import MUTANT_EXAMPLES_NOTE, SuiteReport

_CELLS = {
    "pass": "[green]✓[/] {examples}{ratio}",
    "fail": "[bold red]✗ fail[/] [dim]@{examples}[/]",
    "skip": "[yellow]skip[/]",
    "reference": "[dim]reference[/]",
    "xfail": "[yellow]xfail[/]",
    "xpass": "[magenta]xpass (stale)[/]",
}


def _cell(outcome) -> str:
    ratio = f" · {outcome.worst_ratio:.1e}" if outcome.worst_ratio is not None else ""
    return _CELLS[outcome.status].format(examples=outcome.examples, ratio=ratio)


def matrix(report: SuiteReport) -> Table:
    """Ports as rows, properties as columns."""
    examples = report.max_examples if report.max_examples is not None else "profile's"
    table = Table(
        title=f"remat-conformance · profile {report.profile} · {examples} examples per property",
        caption="✓ N · r: N examples passed; r = worst error/bound ratio (1.0 would fail)",
    )
    table.add_column("port")
    for prop in PROPERTIES:
        table.add_column(f"({prop.id}) {prop.name}", justify="center")
    table.add_column("time", justify="right")
    for port in report.ports:
        label = f"{port.name}\n[dim]{port.framework}[/]" if port.framework else port.name
        if port.state != "available":
            colour = "yellow" if port.state == "unavailable" else "bold red"
            row = [f"[{colour}]{port.state}[/]: {port.reason}"] + [""] * (len(PROPERTIES) - 1)
            table.add_row(label, *row, "")
            continue
        by_key = {o.property: o for o in port.outcomes}
        cells = [_cell(by_key[p.key]) if p.key in by_key else "" for p in PROPERTIES]
        table.add_row(label, *cells, f"{port.seconds:.1f}s")
    return table


def print_report(report: SuiteReport, console: Console) -> None:
    """The whole human-readable report."""
    console.print(matrix(report))
    failures = [(p, o) for p in report.ports for o in p.outcomes if o.status == "fail"]
    for port, outcome in failures:
        console.print(f"\n[bold red]FAIL[/] {port.name} · {outcome.property}")
        console.print(outcome.message, markup=False, highlight=False)
    for port in report.ports:
        for warning in port.warnings:
            console.print(f"[magenta]warning[/]: {warning}")
        if port.state == "broken":
            console.print(f"[bold red]BROKEN[/] {port.name}: {port.reason}")
    if report.mutants is not None:
        print_mutants(report, console)
    print_timing(report, console)


def print_mutants(report: SuiteReport, console: Console) -> None:
    killed, total = score(report.mutants)
    table = Table(title=f"mutants ({MUTANT_EXAMPLES_NOTE})")
    for column in ("mutant", "its bug", "rejected by", "how"):
        table.add_column(column)
    for result in report.mutants:
        if result.status == "killed":
            how = result.message.splitlines()[0] if result.message else ""
            how = how[:90] + ("…" if len(how) > 90 else "")
            table.add_row(result.name, result.bug, result.killed_by, how)
        else:
            style = "bold red" if result.status == "survived" else "yellow"
            table.add_row(result.name, result.bug, f"[{style}]{result.status}[/]", result.message)
    console.print(table)
    colour = "green" if killed == total else "bold red"
    console.print(f"[{colour}]mutants killed {killed}/{total}[/]")


def print_timing(report: SuiteReport, console: Console) -> None:
    parts = []
    for port in report.ports:
        first = sum(o.first_use_seconds for o in port.outcomes)
        total = sum(o.seconds for o in port.outcomes)
        if total:
            parts.append(f"{port.name} {total:.1f}s ({first:.1f}s on first use of a shape)")
    if report.mutants:
        parts.append(f"mutants {sum(m.seconds for m in report.mutants):.1f}s")
    console.print(f"time: {report.seconds:.1f}s wall · " + " · ".join(parts))


def to_json(report: SuiteReport) -> dict[str, Any]:
    """The report as plain data."""
    data = asdict(report)
    data["failed"] = report.failed
    if report.mutants is not None:
        killed, total = score(report.mutants)
        data["mutation_score"] = {"killed": killed, "total": total}
    data["properties"] = {p.key: p.title for p in PROPERTIES}
    return data
