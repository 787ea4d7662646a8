"""Progress of a long command, for the CLI and the Python API alike: a rich progress bar (or
a spinner, with no total) on a terminal, and off one a plain line every few seconds, so that
a log or a notebook never sits silent for minutes.

`Steps.update(advance, description)` is the one call: the bench's `progress(description,
advance)` and compare's `progress(message)` are both made of it. The clock is an argument,
so a test counts lines against a fake clock instead of sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console

from . import style

#: Off a terminal, at most one line per this many seconds.
EVERY_SECONDS = 5.0


class Steps:
    """A context manager for one long command's progress, on `console`.

    - `title`: what runs ("bench"); `total`: its steps (None: a spinner, lines with no count);
    - `every`: the least seconds between two lines off a terminal; `clock`: seconds, rising.
    """

    def __init__(
        self,
        console: Console,
        title: str,
        total: int | None = None,
        *,
        every: float = EVERY_SECONDS,
        clock: Callable[[], float] | None = None,
    ):
        self.console, self.title, self.total = console, title, total
        self.every, self.clock = every, clock or time.monotonic
        self.done, self.latest = 0, ""
        self.live = style.live(console)
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Steps:
        self.started = self.last = self.clock()
        if self.live:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            counted = [BarColumn(), MofNCompleteColumn()] if self.total else [SpinnerColumn()]
            self._bar = Progress(
                TextColumn("{task.description:<36}"),
                *counted,
                TimeElapsedColumn(),
                *([TimeRemainingColumn()] if self.total else []),
                console=self.console,
                transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.title, total=self.total)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def update(self, advance: int = 0, description: str | None = None) -> None:
        """`advance` steps done, and what runs now (None: the same as before)."""
        self.done += advance
        if description:
            self.latest = description
        if self._bar is not None:
            shown = {"description": description} if description else {}
            self._bar.update(self._task, advance=advance, **shown)
            return
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            self.console.print(self.line(now), markup=False, highlight=False)

    def line(self, now: float) -> str:
        """The line off a terminal: `bench: 12/40 · jax L=8 · 35 s`."""
        count = f" {self.done}/{self.total}" if self.total else ""
        latest = f" · {self.latest}" if self.latest else ""
        return f"{self.title}:{count}{latest} · {now - self.started:.0f} s"
