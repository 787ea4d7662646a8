"""Text for Markdown tables, shared by the renderers that write them (merge, versions)."""

from __future__ import annotations

from rich.text import Text


def md_cell(text: str) -> str:
    """Plain text made safe for a Markdown table cell (GitHub flavour)."""
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(raw, safe)
    return "<br>".join(text.splitlines())


def plain(markup: str) -> str:
    """Rich markup without its tags."""
    return Text.from_markup(markup).plain
