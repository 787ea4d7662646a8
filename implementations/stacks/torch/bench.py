"""The eager torch case that `torch_compile`'s bench (`compiled_bench.CompiledCase`) and
DeepSpeed's (`deepspeed.bench.DeepSpeedCase`) build on: L blocks `Linear -> relu -> Linear`
(`block`), CPU. Imports torch and numpy. Eager torch's own bench is its block and instrument
through the generic driver (`implementations.measuring.driver`; the README's Measurements):
this goes when those two benches move there too (issue 75).

- `none`: the blocks as they are;
- `full`: `torch.utils.checkpoint.checkpoint(block, ..., use_reentrant=False)`;
- `save-mm`: the same checkpoint with selective checkpointing,
  `create_selective_checkpoint_contexts` and a policy that saves the outputs
  of `aten.mm`/`aten.addmm` (`MUST_SAVE`) and recomputes everything else.

**Instruments.** An outer `saved_tensors_hooks` sees what autograd keeps
outside the checkpoints (a non-reentrant checkpoint keeps its inputs that
way and hides what is inside). Selective checkpointing caches the outputs it
must save in its own storage, where no hook sees them, so the policy notes
each one (`ctx.op_output`). Both lists are deduplicated by storage, since a
block's output is both cached and the next checkpoint's input. Parameters
are left out by storage too (a `Linear` saves its weight as a transposed view).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import numpy as np
import torch
from torch.utils.checkpoint import (
    CheckpointPolicy,
    create_selective_checkpoint_contexts,
)

from implementations.bench_case import MODES, Data, Static
from implementations.contract import SavedTensor
from implementations.policies import Policy
from implementations.schedules import Schedule
from implementations.stacks.torch import SavedTensors, classify
from implementations.stacks.torch import block as blocks
from implementations.stacks.torch import policies as torch_policies
from implementations.stacks.torch.instrument import Ops

FRAMEWORK = "torch"
VARIANTS = ("",)  # eager: one way to run the stack
MATMULS = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default)


versions = blocks.versions  # torch, and its intra-op threads


class _SavePolicy:
    """The selective-checkpoint policy: save matmul outputs, recompute the rest.

    With `notes` set, every output it saves is noted there by storage, so the
    residual instrument can count what the cache holds.
    """

    def __init__(self, notes: dict[int, torch.Tensor] | None = None):
        self.notes = notes

    def __call__(self, ctx, func, *args, **kwargs) -> CheckpointPolicy:
        if func in MATMULS:
            output = getattr(ctx, "op_output", None)  # given since torch 2.10
            if self.notes is not None and output is not None:
                self.notes.setdefault(output.untyped_storage().data_ptr(), output)
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE


def stack_fn(mode: str, depth: int, policy: _SavePolicy | None = None) -> Callable:
    """`stack(params, x)`: the `depth` blocks as the mode runs them (`block.stack`)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    context_fn = None
    if mode == "save-mm":
        context_fn = functools.partial(
            create_selective_checkpoint_contexts, policy or _SavePolicy()
        )
    return _uniform("none" if mode == "none" else "every", depth, blocks.non_reentrant(context_fn))


def _uniform(schedule: str, depth: int, region: blocks.Checkpoint, tag_h: bool = False) -> Callable:
    # every block alike: plain (`none`) or each its own region (`every`), under one checkpoint
    items = Schedule.parse(schedule).placement(depth)
    return blocks.stack(items, lambda _: region, tag_h)


class TorchCase:
    """One torch configuration at one depth, on the given data.

    **Arguments:**

    - `variant`: `""` (eager is the only way).
    - `mode`: see the module docstring.
    - `data`: the depth's `measure.Data`. x needs no grad, as a batch of data would not.
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; torch runs eager only")
        self.variant, self.mode = variant, mode
        self.params = blocks.parameters(data.blocks)
        self.flat = [p for ps in self.params for p in ps]
        self.x = torch.from_numpy(np.array(data.x, np.float32))
        self.cotangent = torch.from_numpy(np.array(data.cotangent, np.float32))
        self.stack = stack_fn(mode, len(self.params))

    def _grads(self, stack: Callable) -> tuple[torch.Tensor, ...]:
        # The parameters' gradient of sum(y * c), as the VJP of the stack with c.
        return torch.autograd.grad(stack(self.params, self.x), self.flat, self.cotangent)

    def residuals(self) -> tuple[SavedTensor, ...]:
        """What one forward pass keeps for the backward pass, parameters marked as such."""
        hooked = SavedTensors()
        cached: dict[int, torch.Tensor] = {}
        with torch.autograd.graph.saved_tensors_hooks(hooked.pack, hooked.unpack):
            y = stack_fn(self.mode, len(self.params), _SavePolicy(cached))(self.params, self.x)

        def where(ptr: int) -> str:
            # A selective-checkpoint policy keeps its outputs where no hook sees them.
            places = ["kept by a hook"] if ptr in hooked.by_storage else []
            places += ["cached by the checkpoint policy"] if ptr in cached else []
            return " and ".join(places)

        saved = classify({**cached, **hooked.by_storage}, self.x, self.flat, where)
        torch.autograd.grad(y, self.flat, self.cotangent)  # run the backward: frees what it kept
        return saved

    def matmuls(self) -> int:
        with Ops() as ops:
            self._grads(self.stack)
        return ops.matmuls()

    def peak_bytes(self) -> int | None:
        """The highest net allocation during one step, or None if the profiler cannot tell."""
        from torch.profiler import ProfilerActivity, profile

        # Kineto logs every trace start and stop to stderr (its level 5), which
        # scrambles the progress bar; level 6 keeps it quiet. The user's setting wins.
        os.environ.setdefault("KINETO_LOG_LEVEL", "6")
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            grads = self._grads(self.stack)
            del grads
        try:
            events = prof.profiler.kineto_results.events()
        except AttributeError:  # the profiler's internals moved
            return None
        allocations = sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]")
        live = peak = 0
        for _, nbytes in allocations:
            live += nbytes
            peak = max(peak, live)
        return peak if allocations else None

    def measure(self) -> Static:
        return Static(self.residuals(), peak_bytes=self.peak_bytes(), matmuls=self.matmuls())

    def step(self) -> None:
        self._grads(self.stack)  # eager on the CPU: done when it returns


def policy_stack_fn(policy: str, depth: int, context_fn: Callable | None = None) -> Callable:
    """`stack(params, x)`: the `depth` torch blocks under `policy` (a budget runs them plain: it
    is the compiler's). `context_fn` replaces the policy's own (an instrument's)."""
    name = Policy.parse(policy).name
    function = torch_policies.POLICY_FUNCTIONS.get(name)
    if context_fn is None and function is not None:
        context_fn = torch_policies.context_fn(function)
    schedule = "none" if name in ("none", "budget") else "every"
    return _uniform(schedule, depth, blocks.non_reentrant(context_fn), name == "save_named")
