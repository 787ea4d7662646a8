"""Show a suite run: the side-by-side matrix, the failures, the mutation score, the time."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..checking.properties import PROPERTIES
from ..running.mutation import MUTANT_EXAMPLES_NOTE, score
from ..running.results import PortReport, SuiteReport, replay_command
from .style import narrow_table, print_legend, print_table, state_markup

CELLS = {
    # Narrow cells: ten properties, a port name and the time fit 80 columns.
    "pass": "[green]✓{examples}[/]\n[dim]{ratio}[/]",
    "fail": "[bold red]✗fail[/]\n[dim]@{examples}[/]",
    "crashed": "[bold red]✗crash[/]\n[dim]@{examples}[/]",
    "timeout": "[bold red]✗hang[/]\n[dim]@{examples}[/]",
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


def cell(outcome) -> str:
    return CELLS[outcome.status].format(
        examples=outcome.examples, ratio=_ratio(outcome.worst_ratio)
    )


def self_reported(port) -> bool:
    """Whether a port's evidence is its own word (`checking.provenance`), from its report."""
    evidence = (getattr(port, "environment", None) or {}).get("evidence") or {}
    return evidence.get("measured_by") == "port"


def legend() -> list[str]:
    """What every symbol of the matrix means (also under `merge`'s matrix)."""
    names = " · ".join(f"({p.id}) {p.name.replace('_', ' ')}" for p in PROPERTIES)
    fixed = ", ".join(f"({p.id})" for p in PROPERTIES if p.cases is not None)
    fixed_note = f": {fixed} runs its fixed list of cases in full" if fixed else ""
    return [
        names,
        "✓N: passed on all N examples it ran. A smaller N than the others is never a "
        f"partial pass{fixed_note}, and Hypothesis stops early when a property's inputs run "
        "out ((i) draws from a handful of fixed cases). Below it: the worst "
        "error/bound over them (1 would fail). ✗fail, ✗crash, ✗hang @N: failed at its Nth "
        "example (crash: its worker died; hang: it was stopped after the timeout). ref: the "
        "canonical port, the reference. skip: not run here. xfail, xpass: failed, passed "
        "where an expectations file expects a failure. ·: the port did not load.",
        "Under each port: its framework (the stack it runs on); self-reported: its evidence "
        "is the port's own word (a process port, or a Python port that overrides its "
        "records), not the suite's instrument (docs/PROTOCOL.md, the trust boundary). "
        "wall: the port's worker, "
        "start to finish (loading the framework and restarts included); the time line "
        "splits out the checking itself.",
    ]


def matrix(report: SuiteReport) -> Table:
    """Ports as rows, properties as columns; narrow enough for an 80-column terminal."""
    examples = report.max_examples if report.max_examples is not None else "the profile's"
    table = narrow_table(
        title=f"remat-conformance · profile {report.profile} · {examples} examples per property",
    )
    table.add_column("port", no_wrap=True)
    for prop in PROPERTIES:
        table.add_column(f"({prop.id})", justify="center", no_wrap=True)
    table.add_column("wall", justify="right", no_wrap=True)
    for port in report.ports:
        if port.state != "available":
            label = f"{port.name}\n{state_markup(port.state)}"
            table.add_row(label, *["[dim]·[/]"] * len(PROPERTIES), "")
            continue
        by_key = {o.property: o for o in port.outcomes}
        cells = [cell(by_key[p.key]) if p.key in by_key else "" for p in PROPERTIES]
        label = f"{port.name}\n[dim]{port.framework}[/]"
        if self_reported(port):
            label += "\n[yellow]self-reported[/]"
        table.add_row(label, *cells, f"{port.seconds:.0f}s")
    return table


def print_report(report: SuiteReport, console: Console) -> None:
    """The whole human-readable report."""
    print_table(console, matrix(report))
    print_legend(console, *legend())
    for port in report.ports:
        if port.state not in ("available",):
            console.print(f"{state_markup(port.state)} {port.name}: ", end="")
            console.print(port.reason, markup=False, highlight=False)
    if report.canonical_failure:
        console.print("\n[bold red]CANONICAL PORT FAILED[/] ", end="")
        console.print(report.canonical_failure, markup=False, highlight=False)
    for port in report.ports:
        failures = [o for o in port.outcomes if o.failed]
        for outcome in failures:
            heading = f"{outcome.status.upper()}[/] {port.name} · {outcome.property}"
            console.print(f"\n[bold red]{heading}")
            console.print(outcome.message, markup=False, highlight=False)
            command = replay_command(report, port.name, outcome.property, outcome.reproduce)
            # One line however long, so that it can be copied whole.
            console.print(f"[dim]replay:[/] {escape(command)}", highlight=False, soft_wrap=True)
        if (failures or port.state not in ("available", "unavailable")) and port.output.strip():
            _print_output(port, console)
    for port in report.ports:
        for warning in port.warnings:
            console.print(f"[magenta]warning[/]: {warning}")
    if report.mutants is not None:
        print_mutants(report, console)
    print_timing(report, console)


def _print_output(port: PortReport, console: Console) -> None:
    lines = port.output.rstrip().splitlines()
    shown = lines[-20:]
    more = f" (last {len(shown)} of {len(lines)} lines)" if len(lines) > len(shown) else ""
    console.print(f"[dim]{port.name} printed{more}:[/]")
    for line in shown:
        console.print(f"  [dim]|[/] {escape(line)}", highlight=False)


def print_mutants(report: SuiteReport, console: Console) -> None:
    """One line per mutant (its name, the property that rejected it, its bug), then how."""
    killed, total = score(report.mutants)
    console.print(f"\n[bold]mutants[/] [dim]({MUTANT_EXAMPLES_NOTE})[/]")
    width = max(len(r.name) for r in report.mutants)
    for result in report.mutants:
        if result.status == "killed":
            prop = result.killed_by.split("_", 1)[0]
            mark, verdict = "[green]✓[/]", f"rejected by ({prop})"
        elif result.status == "unavailable":  # not run, not counted: the matrix's "·"
            mark, verdict = "[yellow]·[/]", "[yellow]unavailable[/]"
        else:
            mark, verdict = "[bold red]✗[/]", f"[bold red]{result.status}[/]"
        console.print(f" {mark} {result.name:<{width}}  {verdict}: {result.bug}", highlight=False)
        how = (result.message.splitlines() or [""])[0].removeprefix(f"[{result.name}] ")
        if how:
            line = f"   [dim]{escape(how)}[/]"
            console.print(line, soft_wrap=True, highlight=False)  # whole, however long
    colour = "green" if killed == total else "bold red"
    missing = sum(r.status == "unavailable" for r in report.mutants)
    aside = f" ({missing} unavailable, not counted: their port did not load)" if missing else ""
    console.print(f"[{colour}]mutants killed {killed}/{total}[/]{aside}")


def print_timing(report: SuiteReport, console: Console) -> None:
    """Wall time, then each port's checking time and the part spent on new shapes (tracing,
    compiling); the matrix's `wall` column is the whole worker, loading included."""
    parts = []
    for port in report.ports:
        first = sum(o.first_use_seconds for o in port.outcomes)
        total = sum(o.seconds for o in port.outcomes)
        if total:
            parts.append(f"{port.name} {total:.0f}s ({first:.0f}s new shapes)")
    if report.mutants:
        parts.append(f"mutants {sum(m.seconds for m in report.mutants):.0f}s")
    line = f"time: {report.seconds:.0f}s wall"
    if parts:
        line += " · checking (properties only, no loading): " + " · ".join(parts)
    console.print(line, highlight=False)
