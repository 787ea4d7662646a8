"""`run` (`run --json`): the suite's verdict table, ports by properties, each cell the
outcome's status and examples with the worst error/bound under it."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ...checking.properties import PROPERTIES
from ...jsonable import to_data
from ...running.mutation import MUTANT_EXAMPLES_NOTE, score
from ...running.results import SuiteReport
from ...terminal.suite import print_details, print_timing
from ..model import Cell, Column, Table, TableBuilder
from ..numbers import wall
from ..render import terminal as terminal_render
from . import outcomes

CAPTION = (
    "Under each port: its framework (the stack it runs on); self-reported: its evidence is "
    "the port's own word (a process port, or a Python port that overrides its records), not "
    "the suite's instrument (docs/PROTOCOL.md, the trust boundary). wall: the port's worker, "
    "start to finish (loading the framework and restarts included); the time line splits out "
    "the checking itself."
)
STATE_MARKS = {"available": "pass", "unavailable": "unavailable"}


def self_reported(port: dict[str, Any]) -> bool:
    """Whether a port's evidence is its own word (`checking.provenance`), from its report."""
    evidence = (port.get("environment") or {}).get("evidence") or {}
    return evidence.get("measured_by") == "port"


def matrix(run: dict[str, Any]) -> Table:
    """Ports as rows, properties as columns; narrow enough for an 80-column terminal."""
    keys = list(run.get("properties") or {})
    examples = run.get("max_examples")
    examples = "the profile's" if examples is None else examples
    table = TableBuilder(
        f"remat-conformance · profile {run.get('profile')} · {examples} examples per property",
        [
            Column("port"),
            *(Column(outcomes.column(key), "center") for key in keys),
            Column("wall", "right", "seconds"),
        ],
        caption=f"{outcomes.names(keys)}. {outcomes.LEGEND} {CAPTION}",
        kind="matrix",
    )
    for port in run["ports"]:
        state = port.get("state", "available")
        if state != "available":
            label = Cell(port["name"], note=state)
            table.add([label, *[outcomes.NOT_LOADED] * len(keys), ""], key=port["name"])
            continue
        by_key = {o["property"]: o for o in port["outcomes"]}
        note = port.get("framework", "") + ("\nself-reported" if self_reported(port) else "")
        cells = [outcomes.cell(by_key.get(key)) for key in keys]
        seconds = f"{wall(port.get('seconds'))}s"
        table.add([Cell(port["name"], note=note), *cells, seconds], key=port["name"])
    return table.build()


def mutants(run: dict[str, Any]) -> Table | None:
    """One row per mutant: its verdict, the property that rejected it, its bug (and, under
    it, how it was caught or why it could not run); None without a mutation run."""
    found = run.get("mutants")
    if found is None:
        return None
    counted = [m for m in found if m["status"] != "unavailable"]
    killed = sum(m["status"] == "killed" for m in counted)
    table = TableBuilder(
        f"Mutation score: {killed}/{len(counted)} killed",
        [Column("mutant"), Column("verdict"), Column("killed by"), Column("bug", wrap=True)],
        caption=f"A mutant is a deliberately broken port ({MUTANT_EXAMPLES_NOTE}): ✓ killed, a "
        "property rejected it; · unavailable, its port did not load (not run, not counted); "
        "✗ survived, crashed or timed out",
        kind="mutants",
        collapsed=bool(found) and all(m["status"] == "killed" for m in found),
    )
    for m in found:
        status = m["status"]
        if status == "killed":
            verdict = Cell("✓ killed", "pass")
        elif status == "unavailable":
            verdict = Cell("· unavailable", "unavailable")
        else:
            verdict = Cell(f"✗ {status}", "fail")
        how = (m.get("message", "").splitlines() or [""])[0].removeprefix(f"[{m['name']}] ")
        bug = Cell(m.get("bug", ""), note=how)
        table.add([m["name"], verdict, m.get("killed_by", ""), bug], key=m["name"])
    return table.build()


def _data(report: SuiteReport) -> dict[str, Any]:
    return {**to_data(report), "properties": {p.key: p.title for p in PROPERTIES}}


def print_mutants(report: SuiteReport, console: Console) -> None:
    """The mutants' table, then the score."""
    found = mutants(_data(report))
    if found is None:
        return
    terminal_render.print_block(console, found)
    killed, total = score(report.mutants)
    colour = "green" if killed == total else "bold red"
    missing = sum(r.status == "unavailable" for r in report.mutants)
    aside = f" ({missing} unavailable, not counted: their port did not load)" if missing else ""
    console.print(f"[{colour}]mutants killed {killed}/{total}[/]{aside}")


def print_report(report: SuiteReport, console: Console) -> None:
    """The whole human-readable report: the matrix, the details, the mutants, the time."""
    terminal_render.print_block(console, matrix(_data(report)))
    print_details(report, console)
    print_mutants(report, console)
    print_timing(report, console)
