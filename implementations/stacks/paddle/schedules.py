"""`bench --schedules` on PaddlePaddle (dygraph, CPU): the depth-L stack with its regions where a
schedule places them. Imports paddle (through the stack) and numpy.

- `none`: the blocks as they are;
- `every`, `segments(s)`, `nested(...)`, `binomial(c)`: the placement tree, each region
  `paddle.distributed.fleet.utils.recompute(region, x, *its blocks' parameters)` (reentrant,
  Paddle's default), nested as the tree nests; `segments`' tail plain, as
  `fleet.recompute.recompute_sequential` places it (which passes x alone: with x as data, a
  reentrant region's parameters would get no gradient, so the tree passes them in).

Nested under a reentrant recompute (a `PyLayer`), an inner region's forward runs under the
outer's no_grad; the outer's backward reruns it with grad, and its `paddle.autograd.backward`
reaches the inner region, which reruns its own body: each level reruns its blocks once.

**Instruments.** Forward matmuls: the block's own Python calls (two matmuls each: dygraph has
no dispatch hook over kernels), in the forward pass and in `y.backward(c)`. Regions: the
recompute regions entered in the forward pass. Peak bytes: Paddle's host allocator statistic
(`host_memory_stat_peak_value("Allocated", 0)`) over the backward pass, above the bytes
allocated before the forward pass, measured with the parameters frozen and x differentiated:
the same reruns, with no parameter gradient made (none to leave out).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from implementations.bench_case import Data, ScheduleStatic, Values
from implementations.schedules import Departure, Region, Schedule
from implementations.stacks.paddle.bench import STAT, _parameter, _tensor, block, core
from implementations.stacks.paddle.mlp import recompute

FRAMEWORK = "paddle"
SCHEDULES = {
    "none": "the plain blocks",
    "every": "paddle.distributed.fleet.utils.recompute(block, x, *params) per block",
    "segments": "fleet.utils.recompute over each of the first s-1 segments, the tail plain "
    "(recompute_sequential's placement, the parameters passed in)",
    "nested": "fleet.utils.recompute(region, x, *params) nested as the placement nests "
    "(reentrant: each level reruns its blocks)",
    "binomial": "Revolve's placement tree, each region a nested fleet.utils.recompute",
    "optimal": "the optimum's placement tree, each region a nested fleet.utils.recompute",
}
SCHEDULES_NOT_EXPRESSIBLE = {
    "budget": "Paddle's dygraph has no memory-budget solver: recompute takes no budget",
}
SCHEDULE_DEPARTURES = {
    name: Departure(
        "a reentrant recompute's backward runs paddle.autograd.backward over its rerun inside "
        "the outer one's: each open level holds its rerun's output and cotangent meanwhile",
        held_per_level=2,
    )
    for name in ("nested", "binomial")
}
PEAK_METHOD = "Paddle host allocator peak over a backward pass to x, above before the forward"


class _Notes:
    """The instrument's state: block calls (two forward matmuls each), regions entered."""

    def __init__(self):
        self.blocks = self.regions = 0


def tree(items: tuple, notes: _Notes) -> Callable:
    """The placement's items as `run(x, *params)` (4 parameters a block), each region a
    reentrant recompute of its own items, its parameters passed in."""
    parts = []
    for item in items:
        if isinstance(item, Region):
            parts.append((_region(tree(item.items, notes), notes), len(item.blocks)))
        else:
            parts.append((_block(notes), 1))

    def run(x, *params):
        start = 0
        for function, count in parts:
            x = function(x, *params[start : start + 4 * count])
            start += 4 * count
        return x

    return run


def _block(notes: _Notes) -> Callable:
    def counted(x, *params):
        notes.blocks += 1
        return block(x, *params)

    return counted


def _region(inner: Callable, notes: _Notes) -> Callable:
    def entered(x, *params):
        notes.regions += 1  # read after the forward pass (inner ones run there under no_grad)
        return recompute(inner, x, *params)

    return entered


class PaddleScheduleCase:
    """One schedule at one depth on Paddle's dygraph (`schedule_case`)."""

    framework = FRAMEWORK

    def __init__(self, schedule: Schedule, data: Data):
        self.schedule = schedule.label
        self.notes = _Notes()
        self.stack = tree(schedule.placement(len(data.blocks)), self.notes)
        self.flat = [_parameter(a) for arrays in data.blocks for a in arrays]
        self.x, self.cotangent = _tensor(data.x), _tensor(data.cotangent)

    def _clear(self) -> None:
        for p in self.flat:
            p.clear_gradient(False)  # freed, not zeroed

    def _grads(self) -> list[np.ndarray]:
        self._clear()
        y = self.stack(self.x, *self.flat)
        y.backward(self.cotangent)
        grads = [p.grad.numpy() for p in self.flat]
        self._clear()
        return y.numpy(), grads

    def matmuls(self) -> tuple[tuple[int, int], int]:
        """Forward matmuls (two per block call) in the forward and backward passes, and the
        regions entered."""
        self._clear()
        self.notes.blocks = self.notes.regions = 0
        y = self.stack(self.x, *self.flat)
        forward, entered = self.notes.blocks, self.notes.regions
        y.backward(self.cotangent)
        self._clear()
        return (2 * forward, 2 * (self.notes.blocks - forward)), entered

    def peak_bytes(self) -> int:
        """The host allocator's peak over a backward pass to x (parameters frozen), above the
        bytes allocated before the forward pass."""
        frozen = [_tensor(p.numpy()) for p in self.flat]  # stop_gradient: no gradient made
        x = _tensor(self.x.numpy())
        x.stop_gradient = False
        before = core.host_memory_stat_current_value(STAT, 0)
        y = self.stack(x, *frozen)
        core.host_memory_stat_reset_peak_value(STAT, 0)
        y.backward(self.cotangent)
        peak = core.host_memory_stat_peak_value(STAT, 0) - before
        del y
        return peak

    def measure(self) -> ScheduleStatic:
        counted, entered = self.matmuls()
        return ScheduleStatic(counted, self.peak_bytes(), PEAK_METHOD, entered)

    def values(self) -> Values:
        y, grads = self._grads()
        return Values(y, [tuple(grads[i : i + 4]) for i in range(0, len(grads), 4)])

    def step(self) -> None:
        self._grads()  # eager on the CPU: done when it returns


def schedule_case(schedule: str | Schedule, data: Data) -> PaddleScheduleCase:
    """The stack of `len(data.blocks)` blocks under `schedule`."""
    parsed = Schedule.parse(schedule)
    if parsed.name in SCHEDULES_NOT_EXPRESSIBLE:
        raise ValueError(
            f"schedule {parsed.label!r} is not expressible in Paddle: "
            f"{SCHEDULES_NOT_EXPRESSIBLE[parsed.name]}"
        )
    parsed.placement(len(data.blocks))  # a bad depth is refused here, naming the argument
    return PaddleScheduleCase(parsed, data)
