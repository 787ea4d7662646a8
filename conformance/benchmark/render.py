"""The bench's outputs: its document (`conformance.tables.kinds.bench`) as Markdown and on a
terminal, and its PNG plot."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..tables.kinds import bench as bench_tables
from ..tables.render import markdown as markdown_render
from ..tables.render import terminal as terminal_render
from .plot import plot as draw

if TYPE_CHECKING:
    from rich.console import Console

    from . import BenchReport


def markdown(report: BenchReport) -> str:
    """The whole report as Markdown (`bench.md`): settings, the table, the targets, the
    definitions."""
    return markdown_render.document(bench_tables.document(report.to_json()))


def print_report(report: BenchReport, console: Console) -> None:
    """The table and the targets, for a terminal."""
    terminal_render.print_document(console, bench_tables.document(report.to_json(), full=False))


def plot(report: BenchReport, path) -> str | None:
    """Draw the bench into `path` (PNG, `plot`). **Returns:** None or why not."""
    return draw(report, path)
