"""Show a suite run after its matrix: the ports that did not load, the failures, the time."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ..running.results import NOT_RUN, PortReport, SuiteReport, replay_command
from ..running.runner import DID_NOT_REPRODUCE
from .style import state_markup


def print_details(report: SuiteReport, console: Console) -> None:
    """What follows the matrix (`conformance.tables.kinds.run.print_report` prints it all):
    the ports that did not load, the failures with their replay commands, why a property
    was skipped on a port, the warnings, a replay that did not reproduce (then come the
    mutants, the time (`print_timing`) and the verdict)."""
    for port in report.ports:
        # A port not installed is not a failure: the matrix says so, its pip command under it;
        # a port not run (an interrupt's): the matrix and the verdict line say it.
        if port.state not in ("available", "unavailable", NOT_RUN):
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
                # One line, cut at the width: the whole reason is in --json and the page.
                why = outcome.message.strip().splitlines()[0]
                line = Text.assemble((f"skipped {port.name} · {outcome.property}: ", "dim"), why)
                console.print(line, highlight=False, no_wrap=True, overflow="ellipsis")
    for port in report.ports:
        for warning in port.warnings:
            console.print(f"[magenta]warning[/]: {warning}")
    for port in report.ports:  # a replayed example that passes now: said, by its message
        for outcome in port.outcomes:
            if outcome.message.startswith(DID_NOT_REPRODUCE):
                console.print(f"{port.name} · {outcome.property}: ", end="")
                console.print(outcome.message, markup=False, highlight=False)


def _print_output(port: PortReport, console: Console) -> None:
    lines = port.output.rstrip().splitlines()
    shown = lines[-20:]
    more = f" (last {len(shown)} of {len(lines)} lines)" if len(lines) > len(shown) else ""
    console.print(f"[dim]{port.name} printed{more}:[/]")
    for line in shown:
        console.print(f"  [dim]|[/] {escape(line)}", highlight=False)


#: The slowest ports the time line names (every port's wall time is in the matrix).
SLOWEST = 3


def print_timing(report: SuiteReport, console: Console) -> None:
    """One line: the wall time, the checking time (properties only) and the part spent on
    new shapes (tracing, compiling), the slowest ports' and the mutants'. The matrix's `wall`
    column is each port's whole worker, loading included."""
    checking = {
        port.name: (
            sum(o.seconds for o in port.outcomes),
            sum(o.first_use_seconds for o in port.outcomes),
        )
        for port in report.ports
    }
    checking = {name: found for name, found in checking.items() if found[0]}
    line = f"time: {report.seconds:.0f}s wall"
    if checking:
        total = sum(found[0] for found in checking.values())
        first = sum(found[1] for found in checking.values())
        slowest = sorted(checking.items(), key=lambda item: -item[1][0])[:SLOWEST]
        named = ", ".join(f"{name} {found[0]:.0f}s" for name, found in slowest)
        line += f" · checking {total:.0f}s ({first:.0f}s new shapes), slowest {named}"
    if report.mutants:
        line += f" · mutants {sum(m.seconds for m in report.mutants):.0f}s"
    console.print(line, highlight=False)
