"""The processes `compare` measures in: one per framework (a *lane*), side by side.

Comparing every port in one process meant importing every framework there,
one after another (14 s of a 64 s comparison here), and some ports cannot
share a process anyway (Keras keeps one backend per process; Paddle crashes
after TensorFlow). So each framework gets a process of its own: the JAX
ports share one, the torch ports (eager, inductor, DeepSpeed) another: each
port's manifest names its lane (its engine, unless it holds process-wide
state another port cannot share, as a Keras backend). Up to one lane per
core measures at a time, while this process measures the canonical port's
lane, whose framework it has loaded already.

Warm timings wait until every lane has measured. Then one lane at a time
times its ports, interleaved with each other, while every other process of
the comparison sits idle: no timing shares the cores with the comparison's
own work, and none is charged for another framework's threads.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from multiprocessing import connection as connections
from pathlib import Path
from typing import Any

import implementations
from implementations import collector, manifests

from ..running import environment, isolation
from . import model, port_row, rows, warm
from . import port_row as measure

#: Seconds the lanes get to exit by themselves once the comparison is done with them.
EXIT_GRACE = 0.5
lane_of = manifests.lane_of


def plan(names: Sequence[str]) -> dict[str, list[str]]:
    """The lanes for `names`, in order of first appearance, each with its ports in order."""
    lanes: dict[str, list[str]] = {}
    for name in names:
        lanes.setdefault(lane_of(name), []).append(name)
    return lanes


Measure = Callable[[Any], Any]  # the row of one loaded port (compare_port with its inputs)


class Lane:
    """A lane in a process of its own: started, then measured, then timed on request.

    The process sends one message per port as it measures (its row, or "held"
    for a port that cannot load beside the others), then ("measured",), and
    waits; sent "time", it times its working ports interleaved, sends
    ("timed", timings) and waits, idle, until `end()` closes the connection.
    """

    def __init__(self, key: str, names: list[str], args: tuple, target: str = ""):
        self.key, self.names, self._args = key, names, args
        self.target = target or f"{__name__}:serve"  # the function its process runs
        self.rows: dict[str, Any] = {}  # by port name, as they arrive
        self.held: list[str] = []  # ports that must go to a lane of their own
        self.measured = False
        self.failure = ""  # how the process ended early, with its last lines
        self.child: isolation.Child | None = None
        self._scratch = ""
        self._cpu = 0.0

    def start(self) -> None:
        self._scratch = tempfile.mkdtemp(prefix="remat-compare-")
        output = Path(self._scratch) / "output"
        self.child = isolation.Child(self.target, (self.names, *self._args), output=output)

    @property
    def connection(self):
        return self.child.connection

    def take_messages(self) -> None:
        """Read what the process has sent; notice its death."""
        for message in self.child.receive():
            kind = message[0]
            if kind == "row":
                self.rows[message[1].name] = message[1]
            elif kind == "held":
                self.held.append(message[1])
            elif kind == "measured":
                self.measured = True
            elif kind == "raised":
                self._fail(f"raised {message[1]}")
        if not self.measured and not self.failure and not self.child.alive:
            self.take_rest()
            if not self.measured:
                self._fail(isolation.describe(self.child.exit_code(wait=5)))

    def take_rest(self) -> None:
        for message in self.child.receive():
            if message[0] == "row":
                self.rows[message[1].name] = message[1]

    def _fail(self, how: str) -> None:
        last = isolation.tail(Path(self._scratch) / "output", 8)
        self.failure = f"the process of lane {self.key!r} ended ({how})" + (
            f"; its last lines:\n{last}" if last else ""
        )
        self.measured = True

    def cpu_seconds(self) -> float:
        """CPU seconds its process (and what it started) has used so far: it stays alive,
        idle, from its timings until `end()`, so that this can be read after them."""
        work = self.child.work() if self.child is not None else None
        if work is not None:
            self._cpu = work[0]
        return self._cpu

    def time(self) -> dict[str, tuple[Any, Any]]:
        """Ask the process to time its ports and wait for the timings (by port name)."""
        if self.failure:
            return {}
        self.child.send("time")
        try:
            while True:
                kind, value = self.child.connection.recv()
                if kind == "timed":
                    return value
                if kind == "raised":
                    self.failure = f"the process of lane {self.key!r} raised {value}"
                    return {}
        except (EOFError, OSError):
            death = self.child.death()
            self.failure = f"the process of lane {self.key!r} died while timing ({death})"
            return {}

    def let_go(self) -> None:
        """Close its connection: a lane waiting after its timings (`serve`) then exits."""
        if self.child is not None:
            self.child.connection.close()

    def end(self, grace: float = 10.0) -> None:
        if self.child is not None:
            self.let_go()
            self.child.end(grace=grace)
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)


def end_all(lanes: list[Lane]) -> None:
    """End every lane: all are let go first and get a moment to exit together; what is left is
    stopped. Their work is done and reported, and shutting a framework's interpreter down
    cleanly took up to 4 s here, which no result needs."""
    for lane in lanes:
        lane.let_go()
    deadline = time.monotonic() + EXIT_GRACE
    for lane in lanes:
        lane.end(grace=max(0.0, deadline - time.monotonic()))


def run_lanes(lanes: list[Lane], concurrency: int, measure_here: Callable[[], None]) -> None:
    """Measure every lane, at most `concurrency` processes at a time, while `measure_here()`
    measures this process's own lane; a port that turns out "held" gets a lane of its own."""
    waiting, running = list(lanes), []

    def fill() -> None:
        while waiting and len(running) < concurrency:
            lane = waiting.pop(0)
            lane.start()
            running.append(lane)

    try:
        fill()
        measure_here()
        while running:
            connections.wait([lane.connection for lane in running], timeout=1.0)
            for lane in list(running):
                lane.take_messages()
                if lane.measured:
                    running.remove(lane)
                    for name in lane.held:
                        extra = Lane(name, [name], lane._args)
                        lanes.append(extra)
                        waiting.append(extra)
            fill()
    except BaseException:  # interrupted or broken: leave nothing running
        for lane in lanes:
            if lane.child is not None:
                lane.child.kill()
            lane.end()
        raise


def default_concurrency() -> int:
    """One lane per usable core."""
    with contextlib.suppress(AttributeError):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def serve(names: list[str], *args) -> dict[str, tuple[Any, Any]]:
    """A lane's process: measure its ports, report each row, then time them when asked."""
    environment.prepare()
    to_parent = isolation.connection()
    params, x, cotangent, seed, repeats, exact, expected = args
    ports = []
    # The lane keeps what its ports' frameworks load to its end: frozen out of the collector's
    # scans (`implementations.collector`), as in the suite's workers.
    with collector.paused(freeze=True):
        statuses = implementations.status(names)
    for status in statuses:
        if status.elsewhere:
            to_parent.send(("held", status.name))
            continue
        row, port = measure.measure_status(status, expected, params, x, cotangent, seed, exact)
        to_parent.send(("row", row))
        if port is not None and not row.error:
            ports.append(port)
    to_parent.send(("measured",))
    timings = {}
    if to_parent.recv() == "time" and ports:
        found = warm.warm_timings(ports, params, x, cotangent, seed, repeats)
        timings = {port.name: timing for port, timing in zip(ports, found, strict=True)}
    finish(to_parent, timings)


def serve_row(names: list[str], *args) -> None:
    """A lane's process for an extra row (`rows`): made, measured as a port is (no policy
    cells), reported, then timed when asked."""
    environment.prepare()
    to_parent = isolation.connection()
    params, x, cotangent, seed, repeats, exact, expected = args
    (name,) = names
    try:
        with collector.paused(freeze=True):
            row_port = rows.load(name)
        row_port.pin_matmul_precision()
    except Exception as error:  # its framework does not load: the row says why
        to_parent.send(("row", model.PortComparison(name, "unavailable", reason=str(error))))
        row_port = None
    else:
        row = port_row.compare_port(row_port, expected, params, x, cotangent, seed, exact)
        row.framework = row_port.framework
        to_parent.send(("row", row))
        if row.error:
            row_port = None
    to_parent.send(("measured",))
    timings = {}
    if to_parent.recv() == "time" and row_port is not None:
        (found,) = warm.warm_timings([row_port], params, x, cotangent, seed, repeats)
        timings = {name: found}
    finish(to_parent, timings)


def finish(to_parent, timings: dict[str, tuple[Any, Any]]) -> None:
    """Send a lane's timings, then wait, idle, until the comparison closes the connection: it
    reads the lane's CPU time (`Lane.cpu_seconds`) after every lane has timed."""
    to_parent.send(("timed", timings))
    with contextlib.suppress(EOFError, OSError):
        to_parent.recv()
