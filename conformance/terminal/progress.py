"""Progress of a long command, for the CLI and the Python API alike: a rich progress bar (or
a spinner, with no total) on a terminal, and off one a plain line every ten seconds, so that
a log or a notebook never sits silent for minutes: a line when a step ends, and a heartbeat
(`tick`, from a thread) while one step runs long.

`Steps.update(advance, description)` is the one call: the bench's `progress(description,
advance)` and compare's `progress(message)` are both made of it. A count never passes its
total: a sweep that runs more than it announced grows the total. The clock is an argument,
so a test counts lines against a fake clock (and calls `tick` itself) instead of sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console

from . import style

#: Off a terminal, one line per this many seconds.
EVERY_SECONDS = 10.0


class Steps:
    """A context manager for one long command's progress, on `console`.

    - `title`: what runs ("bench"); `total`: its steps (None: a spinner, lines with no count);
    - `every`: the seconds between two lines off a terminal; `clock`: seconds, rising;
    - `heartbeat`: off a terminal, a thread that calls `tick` every `every` seconds (a test
      leaves it out and calls `tick` itself).
    """

    def __init__(
        self,
        console: Console,
        title: str,
        total: int | None = None,
        *,
        every: float = EVERY_SECONDS,
        clock: Callable[[], float] | None = None,
        heartbeat: bool = True,
    ):
        self.console, self.title, self.total = console, title, total
        self.every, self.clock = every, clock or time.monotonic
        self.done, self.latest = 0, ""
        self.live = style.live(console)
        self._bar: Any = None
        self._task: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat = heartbeat and not self.live
        self._thread: threading.Thread | None = None

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
        elif self._heartbeat:
            self._thread = threading.Thread(target=self._beat, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self.tick()

    def update(self, advance: int = 0, description: str | None = None) -> None:
        """`advance` steps done, and what runs now (None: the same as before)."""
        with self._lock:
            self.done += advance
            grown = self.total is not None and self.done > self.total
            if grown:  # more steps than announced: the total grows, the count never passes it
                self.total = self.done
            if description:
                self.latest = description
        if self._bar is not None:
            shown = {"description": description} if description else {}
            if grown:
                shown["total"] = self.total
            self._bar.update(self._task, advance=advance, **shown)
            return
        self.tick()

    def tick(self) -> None:
        """Off a terminal: a line, if `every` seconds have passed since the last one."""
        with self._lock:
            now = self.clock()
            if self._bar is not None or now - self.last < self.every:
                return
            self.last = now
            line = self.line(now)
        self.console.print(line, markup=False, highlight=False)

    def line(self, now: float) -> str:
        """The line off a terminal: `bench: 12/40 · jax L=8 · 35 s`."""
        count = f" {self.done}/{self.total}" if self.total else ""
        latest = f" · {self.latest}" if self.latest else ""
        return f"{self.title}:{count}{latest} · {now - self.started:.0f} s"
