"""How busy the machine was with *other* work while `compare` timed its ports.

The 1-minute load average after a comparison counts the comparison itself:
its lanes measure side by side (`lanes`), so on an idle 2-core machine it
ends near 2, which says nothing about other work. What matters for the
times is what else ran while they were taken. On Linux that is measured:
the CPU time the whole machine used during the timing phase (`/proc/stat`)
minus this comparison's own (this process and its lanes, idle ones
included), over the wall time, in cores. Elsewhere only the load
averages are known.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterable

#: Other processes busy on at least this many cores while timing: the times are noisy.
BUSY_CORES = 1.0

# Fields of /proc/stat's first line that count as busy (user nice system idle iowait irq
# softirq steal ...): everything but idle and iowait.
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def load_average() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def _machine_busy_seconds() -> float | None:
    try:
        with open("/proc/stat", "rb") as file:
            fields = file.readline().split()[1:]
        ticks = sum(int(fields[i]) for i in _BUSY_FIELDS)
    except (OSError, IndexError, ValueError):
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class OthersWhileTiming:
    """Measures the cores other processes kept busy between `start()` and `stop()`.

    `own_children()` gives the CPU seconds the comparison's other processes (its lanes, alive
    until both readings are taken) have used so far; this process's own time is read here.
    """

    def __init__(self, own_children: Callable[[], Iterable[float]]):
        self._children = own_children
        self._start: tuple[float, float, float, float] | None = None

    def _now(self) -> tuple[float, float, float, float] | None:
        machine = _machine_busy_seconds()
        if machine is None:
            return None
        return time.perf_counter(), machine, _own_seconds(), sum(self._children())

    def start(self) -> None:
        self._start = self._now()

    def stop(self) -> float | None:
        """Busy cores of other processes, or None where this system cannot tell."""
        end = self._now()
        if self._start is None or end is None:
            return None
        wall = end[0] - self._start[0]
        if wall <= 0:
            return None
        machine = end[1] - self._start[1]
        own = (end[2] - self._start[2]) + (end[3] - self._start[3])
        return max(0.0, (machine - own) / wall)
