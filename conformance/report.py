"""Show a suite run: the side-by-side matrix, the failures, the mutation score, the time."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .mutation import MUTANT_EXAMPLES_NOTE, score
from .properties import PROPERTIES
from .suite import SuiteReport

_CELLS = {
    "pass": "[green]✓ {examples}[/]\n[dim]{ratio}[/]",
    "fail": "[bold red]✗ fail[/]\n[dim]@{examples}[/]",
    "skip": "[yellow]skip[/]",
    "reference": "[dim]ref[/]",
    "xfail": "[yellow]xfail[/]",
    "xpass": "[magenta]xpass[/]",
}


def _ratio(value: float | None) -> str:
    if value is None:
        return ""
    if value == 0:
        return "0"
    return "<.001" if value < 1e-3 else f"{value:.3f}".lstrip("0")


def _cell(outcome) -> str:
    return _CELLS[outcome.status].format(
        examples=outcome.examples, ratio=_ratio(outcome.worst_ratio)
    )


def matrix(report: SuiteReport) -> Table:
    """Ports as rows, properties as columns; narrow enough for an 80-column terminal."""
    legend = " · ".join(f"({p.id}) {p.name.replace('_', ' ')}" for p in PROPERTIES)
    table = Table(
        title=f"remat-conformance · profile {report.profile} · "
        f"{report.max_examples} examples per property",
        caption=f"{legend}\n✓ N: examples passed; below: worst error/bound (1 would fail); "
        "ref: the canonical port is the reference",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,  # narrow gaps: the matrix fits 80 columns
    )
    table.add_column("port", no_wrap=True)
    for prop in PROPERTIES:
        table.add_column(f"({prop.id})", justify="center", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    for port in report.ports:
        if port.state != "available":
            colour = "yellow" if port.state == "unavailable" else "bold red"
            label = f"{port.name}\n[{colour}]{port.state}[/]"
            table.add_row(label, *["[dim]·[/]"] * len(PROPERTIES), "")
            continue
        by_key = {o.property: o for o in port.outcomes}
        cells = [_cell(by_key[p.key]) if p.key in by_key else "" for p in PROPERTIES]
        table.add_row(f"{port.name}\n[dim]{port.framework}[/]", *cells, f"{port.seconds:.0f}s")
    return table


def print_report(report: SuiteReport, console: Console) -> None:
    """The whole human-readable report."""
    console.print(matrix(report))
    for port in report.ports:
        if port.state != "available":
            colour = "yellow" if port.state == "unavailable" else "bold red"
            console.print(f"[{colour}]{port.state}[/] {port.name}: {port.reason}")
    failures = [(p, o) for p in report.ports for o in p.outcomes if o.status == "fail"]
    for port, outcome in failures:
        console.print(f"\n[bold red]FAIL[/] {port.name} · {outcome.property}")
        console.print(outcome.message, markup=False, highlight=False)
    for port in report.ports:
        for warning in port.warnings:
            console.print(f"[magenta]warning[/]: {warning}")
    if report.mutants is not None:
        print_mutants(report, console)
    print_timing(report, console)


def print_mutants(report: SuiteReport, console: Console) -> None:
    """One line per mutant (its name, the property that rejected it, its bug), then how."""
    killed, total = score(report.mutants)
    console.print(f"\n[bold]mutants[/] [dim]({MUTANT_EXAMPLES_NOTE})[/]")
    width = max(len(r.name) for r in report.mutants)
    for result in report.mutants:
        if result.status == "killed":
            prop = result.killed_by.split("_", 1)[0]
            mark, verdict = "[green]✓[/]", f"rejected by ({prop})"
        else:
            colour = "bold red" if result.status == "survived" else "yellow"
            mark, verdict = f"[{colour}]✗[/]", f"[{colour}]{result.status}[/]"
        console.print(f" {mark} {result.name:<{width}}  {verdict}: {result.bug}", highlight=False)
        how = (result.message.splitlines() or [""])[0].removeprefix(f"[{result.name}] ")
        if how:
            line = f"   [dim]{escape(how)}[/]"
            console.print(line, no_wrap=True, overflow="ellipsis", highlight=False)
    colour = "green" if killed == total else "bold red"
    console.print(f"[{colour}]mutants killed {killed}/{total}[/]")


def print_timing(report: SuiteReport, console: Console) -> None:
    """Wall time, then each port's time and the part spent on new shapes (tracing, compiling)."""
    parts = []
    for port in report.ports:
        first = sum(o.first_use_seconds for o in port.outcomes)
        total = sum(o.seconds for o in port.outcomes)
        if total:
            parts.append(f"{port.name} {total:.0f}s ({first:.0f}s new shapes)")
    if report.mutants:
        parts.append(f"mutants {sum(m.seconds for m in report.mutants):.0f}s")
    console.print(f"time: {report.seconds:.0f}s wall · " + " · ".join(parts), highlight=False)


def to_json(report: SuiteReport) -> dict[str, Any]:
    """The report as plain data."""
    data = asdict(report)
    data["failed"] = report.failed
    if report.mutants is not None:
        killed, total = score(report.mutants)
        data["mutation_score"] = {"killed": killed, "total": total}
    data["properties"] = {p.key: p.title for p in PROPERTIES}
    return data
