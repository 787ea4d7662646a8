"""Show a suite run after its matrix: the ports that did not load, the failures, the time."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from ..running.results import NOT_RUN, PortReport, SuiteReport, replay_command
from .style import state_markup


def print_details(report: SuiteReport, console: Console) -> None:
    """What follows the matrix (`conformance.tables.kinds.run.print_report` prints it all):
    the ports that did not load, the failures with their replay commands, why a property
    was skipped on a port, the warnings
    (then come the mutants and the time: `print_timing`)."""
    for port in report.ports:
        if port.state == "unavailable":  # not a failure: the matrix counts it apart
            console.print(f"[dim]not installed[/] {port.name}: ", end="")
            console.print(port.reason, markup=False, highlight=False)
        elif port.state == NOT_RUN:  # an interrupt's: the matrix and the verdict line say it
            continue
        elif port.state != "available":
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
    for port in report.ports:  # why a property did not run on a port: said, never silent
        for outcome in port.outcomes:
            if outcome.status == "skip" and outcome.message.strip():
                why = outcome.message.strip().splitlines()[0]
                console.print(f"[dim]skipped {port.name} · {outcome.property}:[/] ", end="")
                console.print(why, markup=False, highlight=False, soft_wrap=True)
    for port in report.ports:
        for warning in port.warnings:
            console.print(f"[magenta]warning[/]: {warning}")


def _print_output(port: PortReport, console: Console) -> None:
    lines = port.output.rstrip().splitlines()
    shown = lines[-20:]
    more = f" (last {len(shown)} of {len(lines)} lines)" if len(lines) > len(shown) else ""
    console.print(f"[dim]{port.name} printed{more}:[/]")
    for line in shown:
        console.print(f"  [dim]|[/] {escape(line)}", highlight=False)


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
