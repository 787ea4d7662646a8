"""The sweep on a terminal (rich) and as Markdown: its document
(`conformance.tables.kinds.versions`), drawn by the renderers."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ..tables.kinds import versions as versions_tables
from ..tables.render import markdown as markdown_render
from ..tables.render import terminal as terminal_render


def print_sweep(data: dict[str, Any], console: Console) -> None:
    """The matrix, its caption, the sets, the degradations and the failures; the verdict
    last."""
    terminal_render.print_document(console, versions_tables.document(data))
    terminal_render.print_verdict(console, versions_tables.verdict(data))


def markdown(data: dict[str, Any]) -> str:
    """The same matrix and lists as Markdown."""
    return markdown_render.document(versions_tables.document(data), level=0)
