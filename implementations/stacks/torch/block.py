"""The exercise's block in torch, and the one builder that places it over L blocks. Imports torch
and numpy.

- `block(x, w1, b1, w2, b2, tag_h=False)`: `Linear -> relu -> Linear` in torch's layout
  (weights `(out, in)`; on a 2-D x each Linear with its bias is one `aten.addmm`); with
  `tag_h`, h goes through the `tag` operator, the name a `save_named` policy saves.
- `placed(items, checkpoint_of, tag_h=False)`: `run(x, *params)` over a placement's items
  (`implementations.schedules`: a block index runs plain, a `Region` is checkpointed), each
  region `checkpoint_of(region)(inner, x, *its blocks' params)`, nested as the placement
  nests: the checkpoint, and so the policy, is chosen per region. The parameters (four a
  block, in block order) are the region's arguments, not its closure: a reentrant
  checkpoint's output requires grad only when an argument does.
- `stack(items, checkpoint_of, tag_h=False)`: the same as `stack(params, x)`, `params` a
  tuple `(w1, b1, w2, b2)` per block.
- `place(placement)`: `placed` from an `implementations.measuring.Placement`, each region
  under its own policy (`POLICIES`), as `implementations.measuring.driver` builds a stack.
  (`implementations.schedules.flat_stack` builds the same tree, but its region callback is
  not told which region it makes, so it cannot give each its own policy.)
- `parameters(blocks)`: the canonical blocks' `(w1, b1, w2, b2)` as torch leaves.
- `non_reentrant(context_fn=None)`: torch's `checkpoint(..., use_reentrant=False)` as a
  region's checkpoint; `Regions`: counts the regions a checkpoint enters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch.nn import functional
from torch.utils.checkpoint import checkpoint

from implementations.measuring.placement import Placement
from implementations.policies import Policy
from implementations.schedules import Region

from . import policies as torch_policies
from .policies import tag

#: A region's checkpoint: `checkpoint(function, x, *params) -> function(x, *params)`.
Checkpoint = Callable[..., torch.Tensor]
PER_BLOCK = 4  # w1, b1, w2, b2
#: Policy -> how a region runs it: a selective checkpoint with the policy's function.
POLICIES = {
    name: f"checkpoint(..., use_reentrant=False, context_fn=partial("
    f"create_selective_checkpoint_contexts, {name}))"
    for name in torch_policies.POLICY_FUNCTIONS
}


def block(x: torch.Tensor, w1, b1, w2, b2, tag_h: bool = False) -> torch.Tensor:
    """(B, F) -> (B, F); see the module's docstring."""
    # One expression: h is dropped once relu has read it. A local would hold it through the
    # second Linear, one B x F tensor more at the peak (bench --schedules reads it).
    mark = tag if tag_h else _unmarked
    return functional.linear(torch.relu(mark(functional.linear(x, w1, b1))), w2, b2)


def placed(
    items: Sequence[Any], checkpoint_of: Callable[[Region], Checkpoint], tag_h: bool = False
) -> Callable[..., torch.Tensor]:
    """`run(x, *params)`: the items in order, each region checkpointed (module docstring)."""
    parts = []  # (function of (x, *params), how many blocks' params it takes)
    for item in items:
        if isinstance(item, Region):  # its checkpoint chosen before its inner regions'
            region_checkpoint = checkpoint_of(item)
            inner = placed(item.items, checkpoint_of, tag_h)
            parts.append((_region(region_checkpoint, inner), len(item.blocks)))
        else:
            parts.append((_tagged if tag_h else block, 1))

    def run(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        start = 0
        for function, blocks in parts:
            x = function(x, *params[start : start + PER_BLOCK * blocks])
            start += PER_BLOCK * blocks
        return x

    return run


def stack(
    items: Sequence[Any], checkpoint_of: Callable[[Region], Checkpoint], tag_h: bool = False
) -> Callable[[Sequence[tuple[torch.Tensor, ...]], torch.Tensor], torch.Tensor]:
    """`stack(params, x)`: `placed(...)` over the blocks' parameter tuples."""
    run = placed(items, checkpoint_of, tag_h)

    def over_blocks(params: Sequence[tuple[torch.Tensor, ...]], x: torch.Tensor) -> torch.Tensor:
        return run(x, *(p for block_params in params for p in block_params))

    return over_blocks


def place(placement: Placement) -> Callable[..., torch.Tensor]:
    """`run(x, *params)`: the placement's blocks and regions, region n under
    `placement.policy_of(n)` ("" or `full`: the plain non-reentrant checkpoint). h goes
    through the `tag` operator in every block when a region saves it by name."""
    numbers = {id(region): n for n, (_, region) in enumerate(placement.regions())}
    chosen = {n: region_checkpoint(placement.policy_of(n)) for n in numbers.values()}
    tag_h = "save_named" in {Policy.parse(p).name for p in placement.used_policies() if p}
    return placed(placement.items, lambda region: chosen[numbers[id(region)]], tag_h)


def region_checkpoint(policy: str) -> Checkpoint:
    """The non-reentrant checkpoint of a region under `policy` ("" or `full`: none)."""
    name = Policy.parse(policy).name if policy else "full"
    if name == "full":
        return non_reentrant()
    if name not in POLICIES:
        raise ValueError(f"policy {policy!r} is not expressible in a region of eager torch")
    return non_reentrant(torch_policies.context_fn(torch_policies.POLICY_FUNCTIONS[name]))


def parameters(blocks: Sequence[tuple[np.ndarray, ...]]) -> list[tuple[torch.Tensor, ...]]:
    """Each canonical block's `(w1, b1, w2, b2)` (kernels `(in, out)`) in torch's layout (weights
    `(out, in)`), as fresh C-contiguous float32 leaves that require grad."""
    return [
        tuple(
            torch.from_numpy(np.array(a, np.float32, order="C")).requires_grad_()
            for a in (w1.T, b1, w2.T, b2)
        )
        for w1, b1, w2, b2 in blocks
    ]


def non_reentrant(context_fn: Callable[[], tuple[Any, Any]] | None = None) -> Checkpoint:
    """`torch.utils.checkpoint.checkpoint(function, x, *params, use_reentrant=False)`, with
    `context_fn` (a selective policy's, an instrument's) when given."""
    extra = {} if context_fn is None else {"context_fn": context_fn}

    def region(function: Callable, x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        return checkpoint(function, x, *params, use_reentrant=False, **extra)

    return region


class Regions:
    """Counts the regions entered through the checkpoints it wraps (`counting`)."""

    def __init__(self):
        self.entered = 0

    def counting(self, checkpoint_of: Callable[[Region], Checkpoint]) -> Callable:
        """`checkpoint_of`, each region's checkpoint counting its entries."""

        def counted(region: Region) -> Checkpoint:
            region_checkpoint = checkpoint_of(region)

            def entered(function: Callable, x: torch.Tensor, *params: torch.Tensor):
                self.entered += 1
                return region_checkpoint(function, x, *params)

            return entered

        return counted


def _region(region_checkpoint: Checkpoint, inner: Callable) -> Callable[..., torch.Tensor]:
    def run(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        return region_checkpoint(inner, x, *params)

    return run


def _unmarked(h: torch.Tensor) -> torch.Tensor:
    return h


def _tagged(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
    return block(x, *params, tag_h=True)
