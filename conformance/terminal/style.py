"""The console (rich) every command prints to, and a port's state in its colour.

A port's state:

- **available**: the port loaded and was checked.
- **unavailable**: its framework is not installed; it is skipped, with the reason.
- **broken**: it cannot load for another reason; that fails the run.

Tables are drawn by `conformance.tables.render.terminal` (whole, never cut).
Legends are paragraphs of their own, wrapped between words. The console
(`console`) follows the output options:

- `--width N`: lay out for N columns (default: the terminal's; off a terminal,
  `$COLUMNS` or 80 for tables and legends, while a line of text is printed whole:
  `LogConsole`);
- `--plain`: for logs: no colour or other escape codes, ASCII rules, no spinners;
- `--no-color` or the `NO_COLOR` environment variable (any value): no escape
  codes at all, bold included.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
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
    log = OPTIONS.width is None and not target.isatty()
    return (LogConsole if log else Console)(**options, **kwargs)


class LogConsole(Console):
    """A console off a terminal: a line of text is printed whole, for the reader's viewer to
    wrap (at 80 columns it broke mid-phrase); tables and legends are still laid out for the
    width, and a print that asks for its own wrapping (`overflow`, `soft_wrap`) gets it."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        text = all(isinstance(o, (str, Text)) for o in objects)
        if text and kwargs.get("soft_wrap") is None and kwargs.get("overflow") is None:
            kwargs["soft_wrap"] = True
        super().print(*objects, **kwargs)


def live(console: Console) -> bool:
    """Whether spinners and progress bars may draw (not in plain mode, and on a terminal)."""
    return console.is_terminal and not OPTIONS.plain


def state_markup(state: str) -> str:
    """A port state in its colour (any state not listed above is an error: bold red)."""
    return f"[{STATE_COLOURS.get(state, 'bold red')}]{state}[/]"


def print_legend(console: Console, *paragraphs: str) -> None:
    """Legend paragraphs under a table, wrapped between words at the console's width."""
    for paragraph in paragraphs:
        text = Text.from_markup(paragraph, style="dim")
        console.print(text, overflow="fold", crop=False)
