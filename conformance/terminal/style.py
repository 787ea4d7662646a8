"""How the reports look, in one place (rich): the console, a port's state, the tables.

A port's state:

- **available**: the port loaded and was checked.
- **unavailable**: its framework is not installed; it is skipped, with the reason.
- **broken**: it cannot load for another reason; that fails the run.

Output never loses data. A table is printed at the console's width when it
fits there (cells wrap between words), and otherwise at the least width that
holds every cell whole (`print_table`): wider than the terminal then, but no
column dropped and no number cut. Legends are paragraphs of their own,
wrapped between words. The console (`console`) follows the output options:

- `--width N`: lay out for N columns (default: the terminal's; off a terminal,
  `$COLUMNS` or 80);
- `--plain`: for logs: no colour or other escape codes, ASCII rules, no spinners;
- `--no-color` or the `NO_COLOR` environment variable (any value): no escape
  codes at all, bold included.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

STATE_COLOURS = {"available": "green", "unavailable": "yellow", "broken": "bold red"}

#: Off a terminal (a CI log, a pipe, a file), and with no `--width`: lay out for this many.
DEFAULT_WIDTH = 80


@dataclass
class OutputOptions:
    """The output flags of every command (`add_output_arguments`)."""

    width: int | None = None
    plain: bool = False
    no_color: bool = False

    @property
    def colour(self) -> bool:
        # NO_COLOR (https://no-color.org): any value, even empty, turns colour off.
        return not (self.plain or self.no_color or "NO_COLOR" in os.environ)


OPTIONS = OutputOptions()


def configure(width: int | None = None, plain: bool = False, no_color: bool = False) -> None:
    """Set the output options for this process (the CLI calls it once, from the flags)."""
    OPTIONS.width, OPTIONS.plain, OPTIONS.no_color = width, plain, no_color


def console(stderr: bool = False, file: TextIO | None = None, **kwargs: Any) -> Console:
    """A rich console that follows the output options (to stdout, stderr or `file`)."""
    target = file if file is not None else (sys.stderr if stderr else sys.stdout)
    width = OPTIONS.width
    if width is None and not target.isatty():
        # A log has no width of its own: $COLUMNS if the caller set it, else 80.
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else DEFAULT_WIDTH
    options: dict[str, Any] = {"file": target, "width": width}
    if not OPTIONS.colour:
        # color_system=None renders no style at all: no colour, and no bold or dim either.
        options.update(color_system=None, no_color=True, highlight=False, emoji=False)
    return Console(**options, **kwargs)


def live(console: Console) -> bool:
    """Whether spinners and progress bars may draw (not in plain mode, and on a terminal)."""
    return console.is_terminal and not OPTIONS.plain


def state_markup(state: str) -> str:
    """A port state in its colour (any state not listed above is an error: bold red)."""
    return f"[{STATE_COLOURS.get(state, 'bold red')}]{state}[/]"


def narrow_table(title: str, caption: str = "") -> Table:
    """A table with a simple header rule and narrow gaps, so that reports fit 80 columns.

    `caption` is kept for callers that still put a short note under the table;
    legends belong in `print_legend`, which wraps them between words.
    """
    return Table(
        title=title,
        caption=caption or None,
        box=box.ASCII2 if OPTIONS.plain else box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,
        title_justify="left",
    )


def _whole_words(table: Table) -> None:
    """Give each wrapping column at least its longest word: rich would cut a longer word
    with an ellipsis ("jax_checkpo…") rather than widen the table."""
    for column in table.columns:
        if column.no_wrap:
            continue
        words = [
            len(word)
            for cell in column.cells
            if isinstance(cell, str)
            for word in Text.from_markup(cell).plain.split()
        ]
        if words:
            column.min_width = max(column.min_width or 0, *words)


def table_width(console: Console, table: Table) -> int:
    """The width to print `table` at: the console's, or more where a cell would be cut there."""
    _whole_words(table)
    # Measured with room to spare: a measurement never exceeds the width it is given.
    needed = console.measure(table, options=console.options.update_width(10_000)).minimum
    return max(console.width, needed)


def print_table(console: Console, table: Table) -> None:
    """Print `table` whole: never a dropped column or a cut cell (see the module docstring)."""
    # console.print(width=...) cannot go past the console's width: widen the console itself.
    width = console.width
    console.width = table_width(console, table)
    try:
        console.print(table, crop=False)
    finally:
        console.width = width


def print_legend(console: Console, *paragraphs: str) -> None:
    """Legend paragraphs under a table, wrapped between words at the console's width."""
    for paragraph in paragraphs:
        text = Text.from_markup(paragraph, style="dim")
        console.print(text, overflow="fold", crop=False)
