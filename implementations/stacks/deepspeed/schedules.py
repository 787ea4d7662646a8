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

**Instruments** (the torch schedule case's, `TorchScheduleCase` below, which was eager torch's
before it moved onto its block and instrument; it goes when DeepSpeed moves there too):
forward matmuls are `aten.addmm` calls (a dispatch mode) in the forward pass and in
`.backward(c)` (a reentrant checkpoint refuses `torch.autograd.grad`); regions the
checkpoints entered in the forward pass; the peak torch's profiler memory events over the
backward pass, the returned gradients left out (DeepSpeed allocates through torch).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import deepspeed
import numpy as np
import torch

from implementations.bench_case import Data, ScheduleStatic, Values
from implementations.schedules import Departure, Schedule
from implementations.stacks.deepspeed.bench import backward_grads
from implementations.stacks.torch import block as blocks
from implementations.stacks.torch.instrument import PHASES, Ops, allocations

FRAMEWORK = "deepspeed"
SCHEDULES = {
    "none": "the plain blocks",
    "every": "deepspeed.checkpointing.checkpoint(block, x, *params) per block",
    "segments": "deepspeed.checkpointing.checkpoint over each of the first s-1 segments, "
    "the tail plain",
    "nested": "deepspeed.checkpointing.checkpoint(region, x, *params) nested as the placement "
    "nests (reentrant: each level reruns its blocks)",
    "binomial": "Revolve's placement tree, each region a nested deepspeed checkpoint",
    "optimal": "the optimum's placement tree, each region a nested deepspeed checkpoint",
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


PEAK_METHOD = "torch profiler memory events, backward pass, gradients left out"
#: The forward Linear with its bias: the backward's products are `aten.mm`.
FORWARD_MATMUL = ("aten.addmm",)


def stack_fn(
    schedule: Schedule,
    params: list[tuple[torch.Tensor, ...]],
    regions: blocks.Regions,
    region: blocks.Checkpoint,
) -> Callable[[torch.Tensor], torch.Tensor]:
    """`stack(x)` for the schedule over the blocks' parameters: each region `region`, counted in
    `regions`."""
    stack = blocks.stack(schedule.placement(len(params)), regions.counting(lambda _: region))
    return functools.partial(stack, params)


class TorchScheduleCase:
    """One schedule at one depth, each region the checkpoint given (DeepSpeed's)."""

    framework = "torch"

    def __init__(self, schedule: Schedule, data: Data, region: blocks.Checkpoint):
        self.schedule = schedule.label
        self.params, self.regions = blocks.parameters(data.blocks), blocks.Regions()
        self.flat = [p for ps in self.params for p in ps]
        self.stack = stack_fn(schedule, self.params, self.regions, region)
        self.x = torch.from_numpy(np.array(data.x, np.float32))
        self.cotangent = torch.from_numpy(np.array(data.cotangent, np.float32))

    def _grads(self, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.autograd.grad(y, self.flat, self.cotangent)

    def matmuls(self) -> tuple[tuple[int, int], int]:
        """Forward matmuls (forward pass, backward pass) and the regions entered."""
        self.regions.entered = 0
        with Ops() as ops:
            y = self.stack(self.x)
            entered = self.regions.entered  # not the reruns' own
            self._grads(y)
        return tuple(ops.count(FORWARD_MATMUL, phase) for phase in PHASES), entered

    def peak_bytes(self) -> int | None:
        """The most bytes alive during the backward pass above none, gradients left out: the
        profiler's allocations (pointer and size) from the forward pass on, the backward's
        start marked by an allocation of its own."""
        from torch.profiler import ProfilerActivity, profile

        os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # as the depth bench: keep kineto quiet
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            y = self.stack(self.x)
            marker = torch.empty(1, dtype=torch.uint8)
            mark = marker.untyped_storage().data_ptr()
            grads = self._grads(y)
            del y, marker
        try:
            events = allocations(prof)
        except (AttributeError, ImportError):  # the profiler's internals moved
            return None
        returned = {g.untyped_storage().data_ptr() for g in grads}
        return _backward_peak(events, mark, returned)

    def measure(self) -> ScheduleStatic:
        counted, entered = self.matmuls()
        return ScheduleStatic(counted, self.peak_bytes(), PEAK_METHOD, entered)

    def values(self) -> Values:
        grads = self._grads(self.stack(self.x))
        y = self.stack(self.x).detach().numpy()
        per_block = [
            (w1.T.numpy(), b1.numpy(), w2.T.numpy(), b2.numpy())
            for w1, b1, w2, b2 in zip(*(iter(grads),) * 4, strict=True)
        ]
        return Values(y, per_block)

    def step(self) -> None:
        self._grads(self.stack(self.x))  # eager on the CPU: done when it returns


def _backward_peak(allocations: list[tuple[int, int]], mark: int, returned: set[int]) -> int | None:
    """The most bytes alive from the marker's allocation on (what the forward kept, then the
    backward's), the returned gradients left out. Addresses are reused once freed, so each
    is told apart by its pairing: the marker is the last allocation at its address (it lives
    to the end of the step), a returned gradient one still open at the end; an earlier
    tensor at either address is counted as any other."""
    open_at: dict[int, int] = {}  # address -> index of its allocation not yet freed
    for index, (address, nbytes) in enumerate(allocations):
        if nbytes > 0:
            open_at[address] = index
        else:
            open_at.pop(address, None)
    start = max((i for i, (a, n) in enumerate(allocations) if a == mark and n > 0), default=None)
    if start is None:
        return None
    left_out = {i for a, i in open_at.items() if a in returned} | {start}
    live = peak = 0
    for index, (address, nbytes) in enumerate(allocations):
        if index == start:
            peak = live  # the backward starts with what the forward kept
        if index in left_out or (nbytes < 0 and address == mark and index > start):
            continue
        live += nbytes
        if index > start:
            peak = max(peak, live)
    return peak


class DeepSpeedScheduleCase(TorchScheduleCase):
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
