"""`bench --schedules` on MindSpore (PyNative, CPU): the depth-L stack with its regions where a
schedule places them. Imports mindspore (through the stack) and numpy.

- `none`: the block cells as they are;
- `every`, `segments(s)`, `nested(...)`, `binomial(c)`: the placement tree as cells, each
  region a `Region` cell grouping its items' cells with `Cell.recompute()` called on it,
  nested as the tree nests (`segments`' tail plain, as torch's `checkpoint_sequential`).

**Instruments.** Forward matmuls: the block cells' own `construct` calls (two matmuls each:
PyNative hooks cells, not kernels), in the forward half of `mindspore.vjp` and in its
pullback. Regions: the `Region` cells entered in the forward pass. Peak bytes: not measured
(None): MindSpore's memory statistics cover device memory pools, and on the CPU
`mindspore.runtime.max_memory_allocated()` stays 0.
"""

from __future__ import annotations

import numpy as np

from implementations.bench_case import Data, ScheduleStatic, Values
from implementations.schedules import Region, Schedule
from implementations.stacks.mindspore import ms  # guarded, PyNative
from implementations.stacks.mindspore.bench import Block

FRAMEWORK = "mindspore"
SCHEDULES = {
    "none": "the plain block cells",
    "every": "Cell.recompute() on every block cell",
    "segments": "Cell.recompute() on a cell grouping each of the first s-1 segments, the "
    "tail plain",
    "nested": "Cell.recompute() on grouping cells nested as the placement nests",
    "binomial": "Revolve's placement tree, each region a grouping cell with Cell.recompute()",
}
SCHEDULES_NOT_EXPRESSIBLE = {
    "budget": "MindSpore has no memory-budget solver in PyNative: Cell.recompute takes none",
}
PEAK_METHOD = "none: MindSpore's memory statistics stay 0 on the CPU (device pools only)"


class _Notes:
    blocks = 0
    regions = 0


class CountedBlock(Block):
    """The stack's block cell, its forward evaluations noted."""

    def construct(self, x):
        _Notes.blocks += 1
        return self.fc2(self.relu(self.fc1(x)))


class Items(ms.nn.Cell):
    """A placement's items in order as cells: a block cell or a recomputed `Items` cell."""

    def __init__(self, items: tuple, blocks: list, *, region: bool):
        super().__init__()
        self.region = region
        self.parts = ms.nn.CellList(
            [
                Items(item.items, blocks, region=True)
                if isinstance(item, Region)
                else CountedBlock(*blocks[item], recompute=False)
                for item in items
            ]
        )
        if region:
            self.recompute()

    def construct(self, x):
        _Notes.regions += self.region
        for part in self.parts:
            x = part(x)
        return x


class MindSporeScheduleCase:
    """One schedule at one depth on MindSpore PyNative (`schedule_case`)."""

    framework = FRAMEWORK

    def __init__(self, schedule: Schedule, data: Data):
        self.schedule = schedule.label
        self.stack = Items(schedule.placement(len(data.blocks)), data.blocks, region=False)
        self.params = ms.ParameterTuple(self.stack.trainable_params())
        self.x = ms.Tensor(np.array(data.x, np.float32))
        self.cotangent = ms.Tensor(np.array(data.cotangent, np.float32))

    def matmuls(self) -> tuple[tuple[int, int], int]:
        _Notes.blocks = _Notes.regions = 0
        _, pullback = ms.vjp(self.stack, self.x, weights=self.params)
        forward, entered = _Notes.blocks, _Notes.regions
        pullback(self.cotangent)
        return (2 * forward, 2 * (_Notes.blocks - forward)), entered

    def _vjp(self):
        y, pullback = ms.vjp(self.stack, self.x, weights=self.params)
        _, grads = pullback(self.cotangent)
        return y, grads

    def measure(self) -> ScheduleStatic:
        counted, entered = self.matmuls()
        return ScheduleStatic(counted, None, PEAK_METHOD, entered)

    def values(self) -> Values:
        y, grads = self._vjp()
        arrays = [g.asnumpy() for g in grads]
        return Values(y.asnumpy(), [tuple(arrays[i : i + 4]) for i in range(0, len(arrays), 4)])

    def step(self) -> None:
        _, grads = self._vjp()
        grads[-1].asnumpy()  # PyNative may run asynchronously: wait for the last gradient


def schedule_case(schedule: str | Schedule, data: Data) -> MindSporeScheduleCase:
    """The stack of `len(data.blocks)` blocks under `schedule`."""
    parsed = Schedule.parse(schedule)
    if parsed.name in SCHEDULES_NOT_EXPRESSIBLE:
        raise ValueError(
            f"schedule {parsed.label!r} is not expressible in MindSpore: "
            f"{SCHEDULES_NOT_EXPRESSIBLE[parsed.name]}"
        )
    parsed.placement(len(data.blocks))  # a bad depth is refused here, naming the argument
    return MindSporeScheduleCase(parsed, data)
