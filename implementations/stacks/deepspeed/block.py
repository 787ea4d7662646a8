"""The exercise's block on DeepSpeed, and the one builder that places it over L blocks: torch's
block (`implementations.stacks.torch.block`), each region `deepspeed.checkpointing.checkpoint`.
Imports torch, deepspeed and numpy.

- `place(placement)`: `run(x, *params)` over the canonical parameters (torch's `placed`, each
  region `deepspeed.checkpointing.checkpoint(region, x, *its blocks' params)`, nested as the
  placement nests). The checkpoint is reentrant: its output requires grad only when an
  argument does, so the parameters are its arguments, not its closure. It takes no policy.
  Each region entered under DeepSpeed's instrument (`instrument.active()`) is counted.
- `vjp(run, params, x, cotangent, wrt)`: `(y, gradients)` by `torch.autograd.backward` (a
  reentrant checkpoint refuses `torch.autograd.grad`), into the parameters or into x; the
  caller's tensors left as they are. `from_numpy`, `versions()`.

Declarations (`implementations.measuring.driver` reads them): `FRAMEWORK`, `POLICIES` (none),
`NOT_EXPRESSIBLE`, `REGION`, `DEPARTURES` (nested reentrant checkpoints hold two B x F tensors
per open level, `held_per_level=2`) and `PEAK_WRT`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import deepspeed
import torch

from implementations.contract import installed_versions
from implementations.measuring.departure import every_region, open_regions_peak
from implementations.measuring.placement import Placement
from implementations.stacks.torch import block as torch_block
from implementations.stacks.torch.block import from_numpy

__all__ = ["from_numpy"]

FRAMEWORK = "deepspeed"
#: Policy -> how a region runs it: none, deepspeed.checkpointing.checkpoint takes no policy.
POLICIES: dict[str, str] = {}
REGION = "deepspeed.checkpointing.checkpoint(region, x, *params) (reentrant)"
_NO_POLICY = "deepspeed.checkpointing.checkpoint takes no policy"
NOT_EXPRESSIBLE = {
    "save-mm": _NO_POLICY,
    "save_dots": _NO_POLICY,
    "save_named": _NO_POLICY,
    "offload_dots": "checkpoint_in_cpu offloads the inputs, not the dots, and fails upstream "
    "on the CPU (implementations/stacks/deepspeed/deepspeed.py, DeepSpeed.options)",
    "budget": "DeepSpeed has no memory-budget solver: its checkpoint takes no budget",
}
#: `bench --schedules`' peak: the parameters' gradient, the returned gradients left out (the
#: instrument's). Into x alone DeepSpeed cannot prune the parameters' path (it refuses
#: `inputs`): each region's parameter gradients are made anyway, each open level holding its
#: own until it returns, which would read as activations.
PEAK_WRT = "params"
#: deepspeed/runtime/activation_checkpointing/checkpointing.py:764 (0.19.8): a region's
#: `CheckpointFunction.backward` reruns it and runs `torch.autograd.backward` over the rerun's
#: outputs inside the outer backward: while it runs, its level holds its rerun's output beside
#: the model's count (1 unit), and 1 more where the region is not its level's last item (the
#: forward output the next item read, kept by the outer graph until its gradient ran).
#: Measured at B = 256, F = 64 (the parameters' gradient): every, segments, nested and
#: binomial at L = 4 to 64, each growing peak this count plus 2 (none's 2), exactly.
REENTRANT_BACKWARD = (
    "a reentrant checkpoint's backward runs torch.autograd.backward over its rerun inside the "
    "outer one's: each open region holds its rerun's output, and the forward output where it "
    "is not its level's last item"
)


def reentrant_peak(items: tuple) -> int:
    """The peak in units with `REENTRANT_BACKWARD`'s count: each open region 1 unit more, 2
    where it is not its level's last item (`open_regions_peak`)."""
    return open_regions_peak(items, last=1, other=2)


DEPARTURES = every_region(
    REENTRANT_BACKWARD,
    "deepspeed/runtime/activation_checkpointing/checkpointing.py:764 (0.19.8), "
    "CheckpointFunction.backward's torch.autograd.backward(output_tensors, grad_tensors)",
    reentrant_peak,
)
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


def place(placement: Placement) -> Callable[..., torch.Tensor]:
    """`run(x, *params)`: the placement's blocks and regions over the canonical parameters
    (kernels `(in, out)`, each block reading their transposed views), each region DeepSpeed's
    checkpoint."""
    if placement.used_policies() - {"", "full"}:
        raise ValueError(f"placement: {_NO_POLICY}, got {sorted(placement.used_policies())}")
    return torch_block.placed(placement.items, lambda _: _counted, plain=_canonical_block)


def _canonical_block(x: torch.Tensor, w1, b1, w2, b2) -> torch.Tensor:
    # The kernels transposed inside the region, not before it: a view made outside would put
    # a TransposeBackward between the checkpoint and each parameter, which the engine runs
    # last (its sequence number is the view's), holding every parameter's gradient the
    # checkpoints return until the pass ends; straight to the leaves, each is accumulated
    # (and, into x, dropped) as its region's backward returns.
    return torch_block.block(x, w1.T, b1, w2.T, b2)


def _counted(function: Callable, x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
    from .instrument import region  # the instrument imports this module

    with region():
        # An attribute of deepspeed (a module under deepspeed.runtime), not a submodule.
        return deepspeed.checkpointing.checkpoint(function, x, *params)


def vjp(
    run: Callable,
    params: Sequence[torch.Tensor],
    x: torch.Tensor,
    cotangent: torch.Tensor,
    wrt: str,
) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    """`(y, gradients)` of `run(x, *params)` with `cotangent` into the parameters (x data) or
    into x, by `torch.autograd.backward` onto detached leaves of the caller's tensors. Into x,
    the parameters still require grad, as torch's `vjp` (the forward saves what it saves for
    them); their gradients, which DeepSpeed's backward makes anyway (it refuses `inputs`:
    "not compatible with .grad()"), are dropped as each is accumulated."""
    leaves, x = torch_block.detached_leaves(params, x, wrt)
    if wrt == "x":
        for leaf in leaves:
            leaf.register_post_accumulate_grad_hook(_drop_grad)
    y = run(x, *leaves)
    torch.autograd.backward(y, cotangent)
    return y.detach(), tuple(t.grad for t in (leaves if wrt == "params" else [x]))


def _drop_grad(leaf: torch.Tensor) -> None:
    leaf.grad = None


def versions() -> dict[str, str]:
    """The installed DeepSpeed and torch, and torch's intra-op threads."""
    return {**installed_versions(("deepspeed", "torch")), "threads": str(torch.get_num_threads())}
