"""How the reports look, in one place (rich): a port's state, and the narrow table.

- **available**: the port loaded and was checked.
- **unavailable**: its framework is not installed; it is skipped, with the reason.
- **broken**: it cannot load for another reason; that fails the run.
"""

from __future__ import annotations

from rich import box
from rich.table import Table

STATE_COLOURS = {"available": "green", "unavailable": "yellow", "broken": "bold red"}


def state_markup(state: str) -> str:
    """A port state in its colour (any state not listed above is an error: bold red)."""
    return f"[{STATE_COLOURS.get(state, 'bold red')}]{state}[/]"


def narrow_table(title: str, caption: str) -> Table:
    """A table with a simple header rule and narrow gaps, so that reports fit 80 columns."""
    return Table(
        title=title,
        caption=caption,
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,
    )
