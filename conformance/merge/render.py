"""The merged matrix for the terminal (rich) and as Markdown (a CI job summary, `merge
--markdown` and `run --markdown`): its document (`conformance.tables.kinds.merge`), drawn by
the renderers."""

from __future__ import annotations

from rich.console import Console

from ..tables.kinds import merge as merge_tables
from ..tables.render import markdown as markdown_render
from ..tables.render import terminal as terminal_render
from .combine import Merged, to_json


def print_merged(merged: Merged, console: Console) -> None:
    """The matrix, then the machines, the reports, the conflicts and the failures; the
    verdict last."""
    data = to_json(merged)
    terminal_render.print_document(console, merge_tables.document(data))
    terminal_render.print_verdict(console, merge_tables.verdict(data))


def markdown(merged: Merged) -> str:
    """The same as Markdown."""
    return markdown_render.document(merge_tables.document(to_json(merged)), level=0)
