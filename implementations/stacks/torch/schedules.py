"""The torch schedule case DeepSpeed's `bench --schedules` builds on (`deepspeed.schedules`):
the depth-L stack with its regions where a schedule places them (`block.placed`), each region
the checkpoint it is given. Imports torch and numpy. Eager torch's own `bench --schedules` is
its block and instrument through the generic driver: this goes when DeepSpeed moves there too
(issue 75).

**Instruments.** Forward matmuls: the stack's counter (`instrument.Ops`) counts `aten.addmm` (a
Linear with its bias: the backward's products are `aten.mm`), in the forward pass and in the
backward pass (autograd's engine running). Regions: the checkpoints entered. Peak bytes: the
profiler's memory events over the backward pass, from the live bytes at its start (what the
forward pass left), each allocation that ends up a returned gradient left out.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import numpy as np
import torch

from implementations.bench_case import Data, ScheduleStatic, Values
from implementations.schedules import Schedule
from implementations.stacks.torch import block as blocks
from implementations.stacks.torch.instrument import PHASES, Ops, allocations

FRAMEWORK = "torch"
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

    framework = FRAMEWORK

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
