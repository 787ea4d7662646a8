"""The DeepSpeed stack: the torch stack's L blocks `Linear -> relu -> Linear`, eager, CPU, each
under `deepspeed.checkpointing.checkpoint`. Imports torch, deepspeed and numpy.

- `none`: the blocks as they are (the torch stack's `none`, timed again here so that
  DeepSpeed's ratios are to a baseline of the same sweep);
- `full`: `deepspeed.checkpointing.checkpoint(block, x, w1, b1, w2, b2)` per block, with the
  module's defaults (no `configure()`, so no process group: `partition_activations` and
  `checkpoint_in_cpu` fail upstream on this CPU, see the port, `deepspeed.py`).

There is no `save-mm`: DeepSpeed's checkpoint takes no policy. The parameters are passed to
the checkpoint as arguments, as the torch stack passes them: DeepSpeed's checkpoint is
reentrant, and its output requires grad only when an *input* does, so with x (data, no
grad) as the only input, block 0's parameters would get no gradient.

**Instruments** (the port's, `implementations.stacks.torch.reentrant`):

- *saved*: an outer `saved_tensors_hooks` around the forward pass, plus what each
  `CheckpointFunctionBackward` node keeps in `ctx.deepspeed_saved_tensors` (a plain
  attribute, where no hook sees it), deduplicated by storage; parameters marked.
- *matmuls*: aten mm/addmm calls during one step (a `TorchDispatchMode`), the rerun included.
- *peak*: torch's profiler, as for the torch stack (DeepSpeed allocates through torch).
- *step*: `y.backward(c)`: a reentrant checkpoint refuses `torch.autograd.grad`.

**In the default sweep** (not opt-in as tfjs): at the default B = 1024, F = 256, one step of
L = 8 blocks takes 0.96 s of CPU without a checkpoint and 0.77 s with one, against torch's 0.72
and 0.81 s on the same machine (the CPU time of 5 steps, `time.process_time`; its `none` is
torch's own blocks): the sweep's cost is about torch's.
The whole default sweep of this stack alone took 736 s of CPU on that machine
(loaded: every line ran to max_repeats); docs/BENCHMARKS.md has the rest.
"""

from __future__ import annotations

from collections.abc import Callable

import deepspeed
import torch

from implementations.bench_case import Data
from implementations.contract import SavedTensor, installed_versions
from implementations.schedules import Schedule
from implementations.stacks.lazy import schedule_exports
from implementations.stacks.torch import SavedTensors, classify
from implementations.stacks.torch import block as blocks
from implementations.stacks.torch.compiled_bench import TorchCase
from implementations.stacks.torch.reentrant import kept_on_nodes, nodes_of

FRAMEWORK = "deepspeed"
VARIANTS = ("",)  # eager: one way to run the stack
MODES = ("none", "full")  # deepspeed.checkpointing.checkpoint has no policy: no save-mm
CHECKPOINT_NODE = "CheckpointFunctionBackward"
KEPT_ON_NODE = "deepspeed_saved_tensors"


def versions() -> dict[str, str]:
    """The installed DeepSpeed and torch, and torch's intra-op threads."""
    found = installed_versions(("deepspeed", "torch"))
    found["threads"] = str(torch.get_num_threads())
    return found


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


def stack_fn(mode: str, depth: int) -> Callable:
    """`stack(params, x)`: the `depth` blocks as the mode runs them (the torch stack's
    `block.stack`, each region a DeepSpeed checkpoint)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; DeepSpeed runs {MODES}")
    # An attribute of deepspeed (a module under deepspeed.runtime), not a submodule to import.
    region = deepspeed.checkpointing.checkpoint
    items = Schedule.parse("none" if mode == "none" else "every").placement(depth)
    return blocks.stack(items, lambda _: region)


class DeepSpeedCase(TorchCase):
    """One DeepSpeed configuration at one depth: the torch case, its step by `.backward()`.

    **Arguments:** as `compiled_bench.TorchCase` (the eager case); `variant` is `""`, `mode`
    `none` or `full`.
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; DeepSpeed runs eager only")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; DeepSpeed runs {MODES}")
        super().__init__(variant, "none", data)  # the torch case's tensors
        self.mode, self.stack = mode, stack_fn(mode, len(self.params))

    def _grads(self, stack: Callable) -> tuple[torch.Tensor, ...]:
        return backward_grads(stack(self.params, self.x), self.flat, self.cotangent)

    def residuals(self) -> tuple[SavedTensor, ...]:
        """What one forward pass keeps: autograd's saved tensors and the checkpoint nodes'."""
        hooked = SavedTensors()
        with torch.autograd.graph.saved_tensors_hooks(hooked.pack, hooked.unpack):
            y = self.stack(self.params, self.x)
        # Read before the backward pass, which drops them.
        kept = kept_on_nodes(nodes_of(y, CHECKPOINT_NODE), KEPT_ON_NODE)

        def where(ptr: int) -> str:
            return f"kept on the checkpoint node ({KEPT_ON_NODE})" if ptr in kept else ""

        saved = classify({**kept, **hooked.by_storage}, self.x, self.flat, where)
        y.backward(self.cotangent)  # frees what the forward kept
        for p in self.flat:
            p.grad = None
        return saved


def backward_grads(y: torch.Tensor, flat: list[torch.Tensor], cotangent: torch.Tensor) -> tuple:
    """The gradients of `flat` for the VJP of `y` with `cotangent`, by `.backward` (DeepSpeed's
    checkpoint refuses `torch.autograd.grad`): returned, none left on the parameters."""
    for p in flat:
        p.grad = None
    y.backward(cotangent)
    grads = tuple(p.grad for p in flat)
    for p in flat:
        p.grad = None
    return grads


def build(variant: str, mode: str, data: Data) -> DeepSpeedCase:
    """The case for one configuration."""
    return DeepSpeedCase(variant, mode, data)


#: `bench --policies`: none and full (its depth cases); the rest it cannot express.
POLICIES = ("none", "full")
#: The plan's code (`python -m conformance plan`): a placement's regions with DeepSpeed's own
#: API, `$placement` the placement as nested lists (a list a region, an int a block run plain).
PLACE_CODE = """import deepspeed

def run(items, x):  # blocks: your L modules
    for item in items:
        if isinstance(item, list):
            x = deepspeed.checkpointing.checkpoint(lambda x, item=item: run(item, x), x)
        else:
            x = blocks[item](x)
    return x

y = run($placement, x)"""
#: a: what a taped block keeps beside its input, in B x F float32 tensors: relu's output.
INTERNALS_UNITS = 1.0
NOT_EXPRESSIBLE = {
    "save_dots": "deepspeed.checkpointing.checkpoint takes no policy",
    "save_named": "deepspeed.checkpointing.checkpoint takes no policy",
    "offload_dots": "checkpoint_in_cpu offloads the inputs, not the dots, and fails upstream "
    "on the CPU (implementations/stacks/deepspeed/deepspeed.py, DeepSpeed.options)",
}


# bench --schedules: the stack with its regions where a schedule places them (schedules.py,
# which imports this module: its names are looked up there when first asked for)
__getattr__, __dir__ = schedule_exports(__name__)
