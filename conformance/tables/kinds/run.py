"""`run` (`run --json`): the suite's verdict table, ports by properties, each cell the
outcome's status and examples with the worst error/bound under it."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ...checking.properties import PROPERTIES
from ...jsonable import to_data
from ...running.results import SuiteReport
from ...terminal.suite import print_details
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


def print_report(report: SuiteReport, console: Console) -> None:
    """The whole human-readable report: the matrix, then the details."""
    data = {**to_data(report), "properties": {p.key: p.title for p in PROPERTIES}}
    terminal_render.print_block(console, matrix(data))
    print_details(report, console)
