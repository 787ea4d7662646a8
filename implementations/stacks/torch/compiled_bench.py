"""The compiled PyTorch stack: the torch stack's L blocks under `torch.compile` (inductor, CPU).

The same blocks and modes as `implementations.stacks.torch.bench` (`none`, `full`: a non-reentrant
checkpoint per block, `save-mm`: selective checkpointing that saves matmul
outputs), the whole stack compiled as one graph, and the step the VJP of
the compiled stack. Imports torch and numpy.

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

import logging
from collections import Counter
from collections.abc import Callable, Sequence

import torch

from implementations.bench_case import MODES, Data, Static
from implementations.contract import SavedTensor
from implementations.policies import Policy
from implementations.stacks.torch import bench as torch_bench
from implementations.stacks.torch.compiled import CompiledModule, NoRemat

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

    return {**torch_bench.versions(), "cpp compiler": str(inductor_config.cpp.cxx[-1] or "")}


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


class _Stack(torch.nn.Module):
    """The stack as a module: `torch.compile` of `stack(params, x)` through a `CompiledModule`."""

    def __init__(self, stack: Callable, params: Sequence[tuple[torch.Tensor, ...]]):
        super().__init__()
        self.stack, self.params = stack, params

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, F) -> (B, F)
        return self.stack(self.params, x)


class CompiledCase(torch_bench.TorchCase):
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
        self.module = _Stack(torch_bench.stack_fn(mode, len(self.params)), self.params)
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
    case.module = _Stack(torch_bench.policy_stack_fn(policy, len(case.params)), case.params)
    case.stack = lambda params, x: case.compiled(case.module, x)
    return case
