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
- `place(placement)`: `run(x, *params)` from an `implementations.measuring.Placement`, the
  parameters in the canonical layout (kernels `(in, out)`, as the bench's data: each read as
  its transposed view, the same storage), each region under its own policy (`POLICIES`), as
  `implementations.measuring.driver` builds a stack. (`implementations.schedules.flat_stack`
  builds the same tree, but its region callback is not told which region it makes, so it
  cannot give each its own policy.) `vjp(run, params, x, cotangent, wrt)`: the call every
  measurement watches; `from_numpy`, `versions()`.
- `parameters(blocks)`: the canonical blocks' `(w1, b1, w2, b2)` as torch leaves.
- `non_reentrant(context_fn=None)`: torch's `checkpoint(..., use_reentrant=False)` as a
  region's checkpoint, handing on the `context_fn` of torch's instrument where one watches
  the call (`instrument.active()`: it counts regions and reads a selective policy's cache);
  `Regions`: counts the regions a checkpoint enters.

Declarations (`implementations.measuring.driver` reads them): `FRAMEWORK`, `POLICIES`,
`NOT_EXPRESSIBLE`, `REGION`, `SAVE_MM_POLICY` and `DEPARTURES`: torch's early stop as a count
model in code (`early_stop_matmuls`, from `early_stop_reruns`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
import torch
from torch.nn import functional
from torch.utils.checkpoint import checkpoint

from implementations.measuring.departure import CountModel
from implementations.measuring.placement import Placement
from implementations.measuring.stacked import stacked
from implementations.policies import Policy
from implementations.schedules import Item, Region

from . import policies as torch_policies
from .policies import tag

FRAMEWORK = "torch"
#: A region's checkpoint: `checkpoint(function, x, *params) -> function(x, *params)`.
Checkpoint = Callable[..., torch.Tensor]
PER_BLOCK = 4  # w1, b1, w2, b2
#: The depth bench's `save-mm` mode: the matmuls' outputs saved.
SAVE_MM_POLICY = "save_dots"
#: The plan's code (`python -m conformance plan`): a placement's regions with torch's own API,
#: `$placement` the placement as nested lists (a list a region, an int a block run plain).
PLACE_CODE = """from torch.utils.checkpoint import checkpoint

def run(items, x):  # blocks: your L modules
    for item in items:
        if isinstance(item, list):
            x = checkpoint(run, item, x, use_reentrant=False)
        else:
            x = blocks[item](x)
    return x

y = run($placement, x)"""
#: a: what a taped block keeps beside its input, in B x F float32 tensors: relu's output
#: (the second Linear's input; relu's backward reads its mask off it).
INTERNALS_UNITS = 1.0
REGION = "torch.utils.checkpoint.checkpoint(region, x, *params, use_reentrant=False)"
NOT_EXPRESSIBLE = {
    "save_named": "no tensor names; a cached tag still reruns its addmm eagerly",
    "offload_dots": "eager MUST_CPU_OFFLOAD is recompute (torch 2.13)",
    "budget": "eager torch has no solver: activation_memory_budget is torch.compile's "
    "(torch_compile's bench --policies runs budget(b))",
}
#: Policy -> how a region runs it: a selective checkpoint with the policy's function (those
#: eager torch degrades, `NOT_EXPRESSIBLE`, left out).
POLICIES = {
    name: f"checkpoint(..., use_reentrant=False, context_fn=partial("
    f"create_selective_checkpoint_contexts, {name}))"
    for name in torch_policies.POLICY_FUNCTIONS
    if name not in NOT_EXPRESSIBLE
}
#: torch/utils/checkpoint.py (2.13) `_checkpoint_hook`/`_StopRecomputationError`: a
#: non-reentrant region's rerun stops once every tensor its backward unpacks is recomputed
#: (`set_checkpoint_early_stop`, on by default). The count: `early_stop_reruns`. It changes
#: matmuls only: a rerun stopped early holds less, so it excuses no peak.
EARLY_STOP_SOURCE = (
    "torch/utils/checkpoint.py:1084 _StopRecomputationError, raised at :1131 once the rerun "
    "has saved what the backward unpacks (torch 2.13.0)"
)
EARLY_STOP = (
    "torch's non-reentrant checkpoint stops a rerun once what its backward needs is "
    "recomputed (early stop, torch/utils/checkpoint.py _StopRecomputationError): a block's "
    "rerun ends after its first matmul (relu's output is the last tensor it saves), and a "
    "region ending in inner regions skips their blocks (early_stop_reruns counts both; "
    "set_checkpoint_early_stop(False) meets the model)"
)


def early_stop_matmuls(items: Sequence[Item]) -> int:
    """The block matmuls of one step with early stop: the forward pass's two a block, and
    each rerun's (`early_stop_reruns`)."""
    blocks = sum(len(_blocks(item)) for item in items)
    return 2 * blocks + sum(ran for _, ran in early_stop_reruns(items))


DEPARTURES = {
    name: CountModel(EARLY_STOP, EARLY_STOP_SOURCE, {"forward_matmuls": early_stop_matmuls})
    for name in ("nested", "binomial")
}


def early_stop_reruns(items: Sequence[Item]) -> list[tuple[int, int]]:
    """The block evaluations torch's backward pass reruns over a placement's `items`, as
    `(block, matmuls run)`, in no particular order. A region's rerun runs its items until the
    last tensor its forward saved is saved again: every block before its last item whole (2
    matmuls: each output is the next one's input), inner regions' blocks included; its last
    item, a plain block, up to relu's output (1 matmul, `x@W1`: `a@W2` is skipped), an inner
    region not at all (its input, saved as it is entered, is the last). Every region, inner
    ones too, reruns so once."""
    found = []
    for item in items:
        if isinstance(item, Region):
            *before, last = item.items
            found += [(b, 2) for i in before for b in _blocks(i)]
            found += [] if isinstance(last, Region) else [(last, 1)]
            found += early_stop_reruns(item.items)
    return found


def _blocks(item: Item) -> range:
    return item.blocks if isinstance(item, Region) else range(item, item + 1)


def block(x: torch.Tensor, w1, b1, w2, b2, tag_h: bool = False) -> torch.Tensor:
    """(B, F) -> (B, F); see the module's docstring."""
    # One expression: h is dropped once relu has read it. A local would hold it through the
    # second Linear, one B x F tensor more at the peak (bench --schedules reads it).
    mark = tag if tag_h else _unmarked
    return functional.linear(torch.relu(mark(functional.linear(x, w1, b1))), w2, b2)


def placed(
    items: Sequence[Any],
    checkpoint_of: Callable[[Region], Checkpoint],
    tag_h: bool = False,
    plain: Callable[..., torch.Tensor] | None = None,
) -> Callable[..., torch.Tensor]:
    """`run(x, *params)`: the items in order, each region checkpointed (module docstring);
    each block `plain(x, *its params)` (default: `block`, tagged with `tag_h`)."""
    each = plain or (_tagged if tag_h else block)
    return stacked(items, each, lambda region: functools.partial(_region, checkpoint_of(region)))


def stack(
    items: Sequence[Any], checkpoint_of: Callable[[Region], Checkpoint], tag_h: bool = False
) -> Callable[[Sequence[tuple[torch.Tensor, ...]], torch.Tensor], torch.Tensor]:
    """`stack(params, x)`: `placed(...)` over the blocks' parameter tuples."""
    run = placed(items, checkpoint_of, tag_h)

    def over_blocks(params: Sequence[tuple[torch.Tensor, ...]], x: torch.Tensor) -> torch.Tensor:
        return run(x, *(p for block_params in params for p in block_params))

    return over_blocks


def place(placement: Placement) -> Callable[..., torch.Tensor]:
    """`run(x, *params)`: the placement's blocks and regions over the canonical parameters
    (kernels `(in, out)`, read as their transposed views), region n under
    `placement.policy_of(n)` ("" or `full`: the plain non-reentrant checkpoint)."""
    numbers = {id(region): n for n, (_, region) in enumerate(placement.regions())}
    chosen = {n: region_checkpoint(placement.policy_of(n)) for n in numbers.values()}
    return on_canonical(placed(placement.items, lambda region: chosen[numbers[id(region)]]))


def on_canonical(run: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """`run(x, *params)` called with the canonical parameters (kernels `(in, out)`): each kernel
    handed on as its transposed view (torch's `(out, in)`, the same storage)."""

    def canonical(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        return run(x, *(p.T if i % 2 == 0 else p for i, p in enumerate(params)))

    return canonical


def region_checkpoint(policy: str) -> Checkpoint:
    """The non-reentrant checkpoint of a region under `policy` ("" or `full`: none)."""
    name = Policy.parse(policy).name if policy else "full"
    if name == "full":
        return non_reentrant(watched=True)
    if name not in POLICIES:
        raise ValueError(f"policy {policy!r} is not expressible in a region of eager torch")
    return non_reentrant(policy_fn=torch_policies.POLICY_FUNCTIONS[name], watched=True)


def vjp(
    run: Callable,
    params: Sequence[torch.Tensor],
    x: torch.Tensor,
    cotangent: torch.Tensor,
    wrt: str,
) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    """`(y, gradients)`: `torch.autograd.grad` of `run(x, *params)` with `cotangent`, into the
    parameters (`wrt="params"`, x data) or into x (`wrt="x"`: the parameters still require
    grad, so the forward saves what it saves for them, and the engine runs x's path only).
    The caller's tensors are left as they are: the call takes detached leaves of them."""
    leaves, x = detached_leaves(params, x, wrt)
    y = run(x, *leaves)
    grads = torch.autograd.grad(y, leaves if wrt == "params" else [x], cotangent)
    return y.detach(), tuple(grads)


def detached_leaves(
    params: Sequence[torch.Tensor], x: torch.Tensor, wrt: str
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Detached leaves of the caller's parameters (each requiring grad) and x (requiring grad
    with `wrt="x"`), for a VJP into `wrt`; a `wrt` other than `params` or `x` refused."""
    if wrt not in ("params", "x"):
        raise ValueError(f"wrt must be 'params' or 'x', got {wrt!r}")
    return [p.detach().requires_grad_() for p in params], x.detach().requires_grad_(wrt == "x")


def from_numpy(array: np.ndarray) -> torch.Tensor:
    """torch's tensor for the bench's data: a C-contiguous float32 copy on the CPU."""
    return torch.from_numpy(np.array(array, np.float32, order="C"))


def versions() -> dict[str, str]:
    """The installed torch version, and its intra-op threads."""
    try:
        found = {"torch": version("torch")}
    except PackageNotFoundError:
        found = {"torch": torch.__version__}
    return {**found, "threads": str(torch.get_num_threads())}


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


def non_reentrant(
    context_fn: Callable[[], tuple[Any, Any]] | None = None,
    policy_fn: Callable | None = None,
    watched: bool = False,
) -> Checkpoint:
    """`torch.utils.checkpoint.checkpoint(function, x, *params, use_reentrant=False)`, with
    `context_fn` (an instrument's) when given, else `policy_fn`'s selective checkpoint. With
    `watched`, a region run under torch's instrument (`instrument.active()`) takes the
    watch's `context_fn` instead, which counts it and reads `policy_fn`'s cache."""
    if context_fn is None and policy_fn is not None:
        context_fn = torch_policies.context_fn(policy_fn)

    def region(function: Callable, x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        chosen = context_fn
        watch = _active() if watched else None
        if watch is not None:
            chosen = watch.context_fn(policy_fn)
        extra = {} if chosen is None else {"context_fn": chosen}
        return checkpoint(function, x, *params, use_reentrant=False, **extra)

    return region


def _active() -> Any:
    from .instrument import active  # the instrument imports this module

    return active()


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
