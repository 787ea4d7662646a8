"""`bench --schedules` on HIPS autograd (eager numpy): the depth-L stack with its regions where a
schedule places them. Imports autograd and numpy.

- `none`: the blocks as they are;
- `every`, `segments(s)`, `nested(...)`, `binomial(c)`: the placement tree, each region the
  suite's deferred checkpoint recipe (`remat.checkpoint`: keeps its inputs, traces its body
  again in the backward pass), nested as the tree nests (`segments`' tail plain, as torch's
  `checkpoint_sequential` leaves it). One primitive, made once, runs every region: its items
  are a keyword argument (passed through, never differentiated), as autograd registers each
  primitive for good.

**Instruments.** Forward matmuls: the block's own notes (`tap`) of `x @ W1` and `a @ W2` as
each is computed, during `make_vjp`'s forward pass and during the pullback. Regions: the
checkpoint regions entered in the forward pass. Peak bytes: tracemalloc's (numpy reports its
allocations to it) over a backward pass to x, above the bytes before the forward pass: the
same reruns and the same nodes kept, with no parameter gradient made (none to leave out).
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import numpy as np
from autograd import make_vjp

from implementations.bench_case import Data, ScheduleStatic, Values
from implementations.schedules import Departure, Region, Schedule
from implementations.stacks.autograd.mlp import block
from implementations.stacks.autograd.remat import checkpoint

FRAMEWORK = "autograd"
SCHEDULES = {
    "none": "the plain blocks",
    "every": "the deferred checkpoint (remat.checkpoint, autograd's recipe) per block",
    "segments": "the deferred checkpoint over each of the first s-1 segments, the tail plain",
    "nested": "the deferred checkpoint nested as the placement nests",
    "binomial": "Revolve's placement tree, each region a nested deferred checkpoint",
}
SCHEDULES_NOT_EXPRESSIBLE = {
    "budget": "autograd has no memory-budget solver: its checkpoint takes no budget",
}
SCHEDULE_DEPARTURES = {
    name: Departure(
        "autograd's backward_pass keeps every node of its trace until it returns (toposort's "
        "child counts): a level's blocks stay alive while its regions rerun, and each open "
        "level holds its node's cotangent",
        held_per_level=1,
        tape_to_the_end=True,
    )
    for name in ("every", "segments", "nested", "binomial")
}
PEAK_METHOD = "tracemalloc peak over a backward pass to x, above the bytes before the forward"
_FORWARD_MATMULS = frozenset({"d1", "y"})  # the block's notes of x @ W1 and a @ W2


class _Notes:
    """The instrument's state: forward matmuls computed and regions entered."""

    matmuls = 0
    regions = 0

    @classmethod
    def tap(cls, name: str, value: Any) -> Any:
        cls.matmuls += name in _FORWARD_MATMULS
        return value


def _run(x, *params, items: tuple):
    """The items in order: a block index runs plain, a region is the checkpoint primitive."""
    start = 0
    for item in items:
        if isinstance(item, Region):
            count = 4 * len(item.blocks)
            _Notes.regions += 1
            x = _region(x, *params[start : start + count], items=item.items)
        else:
            count = 4
            x = block(*params[start : start + 4], x, tap=_Notes.tap)
        start += count
    return x


#: Every region's primitive (autograd's tables keep each primitive for good: made once).
_region = checkpoint(_run)


class AutogradScheduleCase:
    """One schedule at one depth on autograd (`schedule_case`)."""

    framework = FRAMEWORK

    def __init__(self, schedule: Schedule, data: Data):
        self.schedule = schedule.label
        self.items = schedule.placement(len(data.blocks))
        self.params = [np.array(a, np.float32, order="C") for arrays in data.blocks for a in arrays]
        self.x = np.array(data.x, np.float32, order="C")
        self.cotangent = np.array(data.cotangent, np.float32, order="C")

    def _vjp(self):
        argnums = tuple(range(len(self.params)))
        return make_vjp(lambda *params: _run(self.x, *params, items=self.items), argnums)(
            *self.params
        )

    def matmuls(self) -> tuple[tuple[int, int], int]:
        """Forward matmuls (forward pass, backward pass) and the regions entered."""
        _Notes.matmuls = _Notes.regions = 0
        pullback, _ = self._vjp()
        forward, entered = _Notes.matmuls, _Notes.regions
        pullback(self.cotangent)
        return (forward, _Notes.matmuls - forward), entered

    def peak_bytes(self) -> int:
        """tracemalloc's peak over a backward pass to x, above the bytes before the forward."""
        gc.collect()
        started = not tracemalloc.is_tracing()  # leave a caller's tracing on
        if started:
            tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            pullback, y = make_vjp(lambda x: _run(x, *self.params, items=self.items))(self.x)
            tracemalloc.reset_peak()
            pullback(self.cotangent)
            peak = tracemalloc.get_traced_memory()[1] - before
            del pullback, y
        finally:
            if started:
                tracemalloc.stop()
        return peak

    def measure(self) -> ScheduleStatic:
        counted, entered = self.matmuls()
        return ScheduleStatic(counted, self.peak_bytes(), PEAK_METHOD, entered)

    def values(self) -> Values:
        pullback, y = self._vjp()
        grads = pullback(self.cotangent)
        return Values(np.asarray(y), [tuple(grads[i : i + 4]) for i in range(0, len(grads), 4)])

    def step(self) -> None:
        pullback, _ = self._vjp()
        pullback(self.cotangent)  # eager: done when it returns


def schedule_case(schedule: str | Schedule, data: Data) -> AutogradScheduleCase:
    """The stack of `len(data.blocks)` blocks under `schedule`."""
    parsed = Schedule.parse(schedule)
    if parsed.name in SCHEDULES_NOT_EXPRESSIBLE:
        raise ValueError(
            f"schedule {parsed.label!r} is not expressible in autograd: "
            f"{SCHEDULES_NOT_EXPRESSIBLE[parsed.name]}"
        )
    parsed.placement(len(data.blocks))  # a bad depth is refused here, naming the argument
    return AutogradScheduleCase(parsed, data)
