"""The compiled PyTorch stack: the torch stack's L blocks under `torch.compile` (inductor, CPU).

The blocks and modes of the eager case (`TorchCase`, below: `none`, `full`: a non-reentrant
checkpoint per block, `save-mm`: selective checkpointing that saves matmul
outputs), the whole stack compiled as one graph, and the step the VJP of
the compiled stack. Imports torch and numpy.

`TorchCase` is the eager case this bench builds on, as
eager torch's bench was before it moved onto its block and instrument (the generic driver,
issue 75); it goes when these two benches move there too.

**Instruments.** Residuals, as the compiled port reads them
(`implementations.stacks.torch.compiled`): what AOTAutograd's partitioned
forward graph returns for the backward graph, as inductor compiled it,
parameters and values computed from them alone left out. Matmuls: the
`aten.mm`/`aten.addmm` nodes of the forward and backward graphs (inductor
calls one external kernel for each). Peak memory: the torch profiler, as
for eager torch.

**Compiling** costs seconds per configuration and depth, before any timing:
each depth is a new graph (L unrolled blocks), in all three modes.
"""

from __future__ import annotations

import functools
import logging
import os
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

from implementations.bench_case import MODES, Data, Static
from implementations.contract import SavedTensor
from implementations.policies import Policy
from implementations.schedules import Schedule
from implementations.stacks.torch import SavedTensors, classify
from implementations.stacks.torch import block as blocks
from implementations.stacks.torch import policies as torch_policies
from implementations.stacks.torch.compiled import CompiledModule, NoRemat
from implementations.stacks.torch.instrument import Ops

# Under torch.compile, a checkpoint with a context_fn (save-mm) warns once that
# its region must hold no in-place ops; the blocks hold none. Kept off the
# terminal, where the progress bar is.
logging.getLogger("torch._higher_order_ops.wrap").setLevel(logging.ERROR)

FRAMEWORK = "torch"
VARIANTS = ("compiled",)
#: The bench holds this stack's checkpoint to this time ratio at every depth, not only the
#: deepest (issue 13: compiled torch's checkpoint costs at most 20%).
TIME_TARGET_EVERY_DEPTH = 1.2
MATMULS = ("aten.mm", "aten.addmm")


def versions() -> dict[str, str]:
    """torch's version, its threads, and the C++ compiler inductor calls."""
    from torch._inductor import config as inductor_config

    return {**blocks.versions(), "cpp compiler": str(inductor_config.cpp.cxx[-1] or "")}


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


#: The eager case's save-mm policy saves these outputs.
_SAVED_OPS = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default)


class _SavePolicy:
    """The selective-checkpoint policy: save matmul outputs, recompute the rest.

    With `notes` set, every output it saves is noted there by storage, so the
    residual instrument can count what the cache holds.
    """

    def __init__(self, notes: dict[int, torch.Tensor] | None = None):
        self.notes = notes

    def __call__(self, ctx, func, *args, **kwargs) -> CheckpointPolicy:
        if func in _SAVED_OPS:
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

    framework = "torch"

    def __init__(self, variant: str, mode: str, data: Data):
        if variant != "":
            raise ValueError(f"unknown variant {variant!r}; the eager case runs eager only")
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


class _Stack(torch.nn.Module):
    """The stack as a module: `torch.compile` of `stack(params, x)` through a `CompiledModule`."""

    def __init__(self, stack: Callable, params: Sequence[tuple[torch.Tensor, ...]]):
        super().__init__()
        self.stack, self.params = stack, params

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, F) -> (B, F)
        return self.stack(self.params, x)


class CompiledCase(TorchCase):
    """One compiled configuration at one depth: the eager case's data, through inductor."""

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
        super().__init__("", mode, data)
        self.variant = variant
        # Parameters as nn.Parameter: the recorder tells them from x by type.
        self.params = [tuple(torch.nn.Parameter(p) for p in block) for block in self.params]
        self.flat = [p for ps in self.params for p in ps]
        # Static shapes: every depth is a graph of its own anyway.
        self.compiled = CompiledModule(dynamic=False)
        self.module = _Stack(stack_fn(mode, len(self.params)), self.params)
        self.stack = lambda params, x: self.compiled(self.module, x)

    def _partition(self):
        with self.compiled.recorder.capture() as seen:
            y = self.stack(self.params, self.x)
        torch.autograd.grad(y, self.flat, self.cotangent)  # and compile the backward
        return seen.last()

    def residuals(self) -> tuple[SavedTensor, ...]:
        partition, args = self._partition()
        return partition.record(args).saved

    def matmuls(self) -> int:
        partition, _ = self._partition()
        graphs = (partition.forward, partition.backward)
        count = Counter(node.target for graph in graphs for node in graph.nodes)
        return sum(count[name] for name in MATMULS)

    def measure(self) -> Static:
        return Static(self.residuals(), peak_bytes=self.peak_bytes(), matmuls=self.matmuls())


def build(variant: str, mode: str, data: Data) -> CompiledCase:
    """The case for one configuration."""
    return CompiledCase(variant, mode, data)


# ---------------------------------------------------------------------------
# bench --policies
# ---------------------------------------------------------------------------

#: The budgets torch.compile's `activation_memory_budget` is measured at.
BUDGETS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: The policies `bench --policies` runs here (no checkpoint with each budget too).
POLICIES = ("none", "full", "save_dots", "save_named", *(f"budget({b:g})" for b in BUDGETS))
NOT_EXPRESSIBLE = {"offload_dots": "CPU_OFFLOAD is a plain save under compile (torch 2.13)"}


def policy_case(policy: str, data: Data) -> CompiledCase:
    """The compiled stack under `policy`: `none` as the port compiles it (a partitioner that
    recomputes nothing), a budget as `activation_memory_budget` on the plain blocks."""
    parsed = Policy.parse(policy)
    case = CompiledCase("compiled", "none", data)
    if parsed.name == "none":
        compiled = CompiledModule(dynamic=False, inductor={"custom_partitioner_fn": NoRemat()})
    elif parsed.name == "budget":
        compiled = CompiledModule(
            dynamic=False, functorch={"activation_memory_budget": parsed.budget}
        )
    else:
        compiled = CompiledModule(dynamic=False)
    case.compiled, case.mode = compiled, policy
    case.module = _Stack(policy_stack_fn(policy, len(case.params)), case.params)
    case.stack = lambda params, x: case.compiled(case.module, x)
    return case
