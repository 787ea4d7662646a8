"""`bench --schedules` on MLX (lazy, uncompiled, CPU): the depth-L stack with its regions where
a schedule places them. Imports mlx.

- `none`: the blocks as they are;
- `every`, `segments(s)`, `nested(...)`, `binomial(c)`: the placement tree, each region
  `mx.checkpoint` of a function of its blocks' parameters and its input (what
  `mlx.nn.utils.checkpoint` wraps for a module), nested as the tree nests (`segments`' tail
  plain, as torch's `checkpoint_sequential` leaves it).

**Instruments.** Forward matmuls: the `AddMM` primitives of the step's graph (`Graph.export`:
each block's x @ W1 and a @ W2; the backward's products are `Matmul`), those the output needs
counted as the forward pass's, the rest the reruns. Regions: the `mx.checkpoint` regions
entered. Peak bytes: MLX's own allocator counter, `mx.get_peak_memory()` over one evaluated
step above the active memory before it, less the gradients' bytes (all alive at its end).
"""

from __future__ import annotations

import gc
from collections.abc import Callable

import mlx.core as mx
import numpy as np

from implementations.bench_case import Data, ScheduleStatic, Values
from implementations.schedules import Schedule, flat_stack
from implementations.stacks.mlx import Graph
from implementations.stacks.mlx.bench import block

FRAMEWORK = "mlx"
SCHEDULES = {
    "none": "the plain blocks",
    "every": "mx.checkpoint(block) per block",
    "segments": "mx.checkpoint over each of the first s-1 segments, the tail plain",
    "nested": "mx.checkpoint(region) nested as the placement nests",
    "binomial": "Revolve's placement tree, each region a nested mx.checkpoint",
}
SCHEDULES_NOT_EXPRESSIBLE = {
    "budget": "MLX has no memory-budget solver: mx.checkpoint takes no budget",
}
SCHEDULE_DEPARTURES = {
    name: "MLX evaluates the step's whole lazy graph in one mx.eval, in its own order, not "
    "the backward pass's: its peak does not follow the placement (measured at L = 64, "
    "B = F = 256: 28 to 90 units where the model puts 4 to 128)"
    for name in ("none", "every", "segments", "nested", "binomial")
}
PEAK_METHOD = "mx.get_peak_memory() over one evaluated step, less its gradients"


def _region(inner: Callable, regions: list[int]) -> Callable:
    checkpointed = mx.checkpoint(inner)

    def entered(x, *params):
        regions[0] += 1
        return checkpointed(x, *params)

    return entered


class MlxScheduleCase:
    """One schedule at one depth on MLX (`schedule_case`)."""

    framework = FRAMEWORK

    def __init__(self, schedule: Schedule, data: Data):
        self.schedule = schedule.label
        self.regions = [0]
        regions = self.regions
        self.stack = flat_stack(
            schedule.placement(len(data.blocks)),
            lambda x, *p: block(*p, x),
            lambda inner: _region(inner, regions),
        )
        self.params = [
            mx.array(a.T.copy() if a.ndim == 2 else a)  # (in, out) -> MLX's (out, in)
            for arrays in data.blocks
            for a in arrays
        ]
        self.x, self.cotangent = mx.array(data.x), mx.array(data.cotangent)
        mx.eval(self.params, self.x, self.cotangent)

    def _vjp(self) -> tuple[mx.array, list[mx.array]]:
        outputs, grads = mx.vjp(
            lambda *params: [self.stack(self.x, *params)], self.params, [self.cotangent]
        )
        return outputs[0], grads

    def matmuls(self) -> tuple[tuple[int, int], int]:
        """`AddMM` primitives the output needs, and those the gradients need beyond them; the
        regions a forward pass enters (`mx.vjp` traces the reruns' inner regions too)."""
        self.regions[0] = 0
        self.stack(self.x, *self.params)
        entered = self.regions[0]
        y, grads = self._vjp()
        names = {"y": y} | {f"g{i}": g for i, g in enumerate(grads)}
        graph = Graph.export([y, *grads], names)

        def addmms(outputs: list[str]) -> set:
            needed = graph.ancestors(outputs)
            return {
                graph.producer[a]
                for a in needed
                if a in graph.producer and graph.label[graph.producer[a]] == "AddMM"
            }

        forward = addmms(["y"])
        total = addmms(list(names))
        return (len(forward), len(total - forward)), entered

    def peak_bytes(self) -> int:
        """MLX's peak over one evaluated step above the active memory before, the gradients'
        bytes left out."""
        gc.collect()
        mx.synchronize()
        before = mx.get_active_memory()
        mx.reset_peak_memory()
        y, grads = self._vjp()
        mx.eval(y, grads)
        peak = mx.get_peak_memory() - before - sum(g.nbytes for g in grads)
        del y, grads
        return peak

    def measure(self) -> ScheduleStatic:
        counted, entered = self.matmuls()
        return ScheduleStatic(counted, self.peak_bytes(), PEAK_METHOD, entered)

    def values(self) -> Values:
        y, grads = self._vjp()
        mx.eval(y, grads)
        arrays = [(w1.T, b1, w2.T, b2) for w1, b1, w2, b2 in zip(*(iter(grads),) * 4, strict=True)]
        return Values(np.array(y), [tuple(np.array(a) for a in g) for g in arrays])

    def step(self) -> None:
        mx.eval(*self._vjp())  # lazy: done when the output and gradients are evaluated


def schedule_case(schedule: str | Schedule, data: Data) -> MlxScheduleCase:
    """The stack of `len(data.blocks)` blocks under `schedule`."""
    parsed = Schedule.parse(schedule)
    if parsed.name in SCHEDULES_NOT_EXPRESSIBLE:
        raise ValueError(
            f"schedule {parsed.label!r} is not expressible in MLX: "
            f"{SCHEDULES_NOT_EXPRESSIBLE[parsed.name]}"
        )
    parsed.placement(len(data.blocks))  # a bad depth is refused here, naming the argument
    return MlxScheduleCase(parsed, data)
