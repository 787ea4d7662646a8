"""`bench --schedules` on DeepSpeed (eager torch, CPU): the depth-L stack with its regions where
a schedule places them. Imports torch, deepspeed and numpy.

- `none`: the blocks as they are;
- `every`, `segments(s)`, `nested(...)`, `binomial(c)`: the torch stack's placement tree
  (`torch.block.placed`), each region
  `deepspeed.checkpointing.checkpoint(region, x, *its blocks' parameters)`, nested as the tree
  nests (`segments`' tail plain, as torch's `checkpoint_sequential` leaves it). The parameters
  are arguments: the checkpoint is reentrant, its output requires grad only when an input does.

**Nesting under a reentrant checkpoint.** The outer region's forward runs under `no_grad`, so
an inner checkpoint there keeps nothing; the outer's backward reruns its body with grad, the
inner checkpoints again keeping their inputs only, and `.backward()` reaches each inner
`CheckpointFunctionBackward`, which reruns its own body: every level reruns its blocks once,
the model's count.

**Instruments** (the torch schedule case's, `implementations.stacks.torch.schedules`):
forward matmuls are `aten.addmm` calls (a dispatch mode) in the forward pass and in
`.backward(c)` (a reentrant checkpoint refuses `torch.autograd.grad`); regions the
checkpoints entered in the forward pass; the peak torch's profiler memory events over the
backward pass, the returned gradients left out (DeepSpeed allocates through torch).
"""

from __future__ import annotations

import deepspeed
import torch

from implementations.bench_case import Data
from implementations.schedules import Departure, Schedule
from implementations.stacks.deepspeed.bench import backward_grads
from implementations.stacks.torch import schedules as torch_schedules

FRAMEWORK = "deepspeed"
SCHEDULES = {
    "none": "the plain blocks",
    "every": "deepspeed.checkpointing.checkpoint(block, x, *params) per block",
    "segments": "deepspeed.checkpointing.checkpoint over each of the first s-1 segments, "
    "the tail plain",
    "nested": "deepspeed.checkpointing.checkpoint(region, x, *params) nested as the placement "
    "nests (reentrant: each level reruns its blocks)",
    "binomial": "Revolve's placement tree, each region a nested deepspeed checkpoint",
}
SCHEDULES_NOT_EXPRESSIBLE = {
    "budget": "DeepSpeed has no memory-budget solver: its checkpoint takes no budget",
}
SCHEDULE_DEPARTURES = {
    name: Departure(
        "a reentrant checkpoint's backward runs torch.autograd.backward over its rerun inside "
        "the outer one's: each open level holds its rerun's output and cotangent meanwhile",
        held_per_level=2,
    )
    for name in ("nested", "binomial")
}
PEAK_METHOD = torch_schedules.PEAK_METHOD


class DeepSpeedScheduleCase(torch_schedules.TorchScheduleCase):
    """One schedule at one depth on DeepSpeed: the torch case (its placement tree, its counter),
    each region a DeepSpeed checkpoint, its gradients by `.backward()`."""

    framework = FRAMEWORK

    def __init__(self, schedule: Schedule, data: Data):
        super().__init__(schedule, data, region=deepspeed.checkpointing.checkpoint)

    def _grads(self, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return backward_grads(y, self.flat, self.cotangent)


def schedule_case(schedule: str | Schedule, data: Data) -> DeepSpeedScheduleCase:
    """The stack of `len(data.blocks)` blocks under `schedule`."""
    parsed = Schedule.parse(schedule)
    if parsed.name in SCHEDULES_NOT_EXPRESSIBLE:
        raise ValueError(
            f"schedule {parsed.label!r} is not expressible in DeepSpeed: "
            f"{SCHEDULES_NOT_EXPRESSIBLE[parsed.name]}"
        )
    parsed.placement(len(data.blocks))  # a bad depth is refused here, naming the argument
    return DeepSpeedScheduleCase(parsed, data)
