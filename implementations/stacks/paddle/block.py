"""The exercise's block in Paddle (dygraph, CPU), and the one builder that places it over L
blocks. Imports paddle (through `loaded`, which refuses to load it after TensorFlow) and numpy.

- `block(x, w1, b1, w2, b2)`: `linear(relu(linear(x, w1, b1)), w2, b2)`, kernels `(in, out)`,
  Paddle's `linear` layout and the canonical one.
- `place(placement)`: `run(x, *params)`, the blocks with a region where the placement puts
  one, each region `paddle.distributed.fleet.utils.recompute(region, x, *its parameters)`
  (reentrant, Paddle's default), nested as the placement nests. The parameters are passed in:
  a reentrant recompute is a `PyLayer`, whose output needs grad only where an input does, so
  with x (data) alone block 0's parameters would get none. `segments`' tail is plain, as
  `fleet.recompute.recompute_sequential` places it.
- `vjp(run, params, x, cotangent, wrt)`: `y.backward(cotangent)` and the leaves' `.grad` (a
  reentrant recompute does not work with `paddle.grad` for the parameters): the call every
  measurement watches. Nested under a reentrant recompute, an inner region's forward runs
  under the outer's no_grad; the outer's backward reruns it with grad, and its
  `paddle.autograd.backward` reaches the inner region, which reruns its own body.

Declarations (`implementations.measuring.driver` reads them): `recompute` takes no policy
(`POLICIES` is empty), what it cannot express and why (`NOT_EXPRESSIBLE`), and where its
figures depart from the model, with the count (`DEPARTURES`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from implementations.contract import installed_versions
from implementations.measuring.departure import every_region, open_regions_peak
from implementations.measuring.placement import Placement
from implementations.measuring.stacked import stacked

from .loaded import paddle
from .mlp import recompute

FRAMEWORK = "paddle"
#: Policy -> how a region runs it: none, fleet.utils.recompute takes no policy.
POLICIES: dict[str, str] = {}
#: The plan's code (`python -m conformance plan`): a placement's regions with Paddle's own API,
#: `$placement` the placement as nested lists (a list a region, an int a block run plain).
PLACE_CODE = """from paddle.distributed.fleet.utils import recompute

def run(items, x):  # blocks: your L layers
    for item in items:
        if isinstance(item, list):
            x = recompute(lambda x, item=item: run(item, x), x)
        else:
            x = blocks[item](x)
    return x

y = run($placement, x)"""
#: a: what a taped block keeps beside its input, in B x F float32 tensors: relu's output.
INTERNALS_UNITS = 1.0
#: Every region of a placement, in words.
REGION = (
    "paddle.distributed.fleet.utils.recompute(region, x, *params) (reentrant, "
    "Paddle's default; nested regions rerun their blocks at each level)"
)
_NO_POLICY = "recompute takes no policy"
NOT_EXPRESSIBLE = {
    **dict.fromkeys(("save-mm", "save_dots", "save_named", "offload_dots"), _NO_POLICY),
    "budget": "Paddle's dygraph has no memory-budget solver: recompute takes no budget",
}
#: paddle/distributed/fleet/recompute/recompute.py (3.3.1), `RecomputeFunction.backward`: it
#: reruns the region's forward and calls `paddle.autograd.backward(outputs, args)` on it while
#: the outer region's own backward is still open, holding that rerun's output and cotangent.
#: paddle/distributed/fleet/recompute/recompute.py:376 (3.3.1): a region's
#: `RecomputeFunction.backward` reruns it and runs `paddle.autograd.backward` over the rerun's
#: outputs inside the outer backward: while it runs, its level holds its rerun's output and
#: its cotangent beside the model's count (2 units), last item of its level or not.
#: Measured at B = 256, F = 64: every, segments, nested and binomial at L = 4 to 64, each
#: growing peak this count plus 2 (none's 2), exactly.
REENTRANT_BACKWARD = (
    "a reentrant recompute's backward runs paddle.autograd.backward over its rerun inside the "
    "outer one's: each open region holds its rerun's output and cotangent meanwhile"
)


def reentrant_peak(items: tuple) -> int:
    """The peak in units with `REENTRANT_BACKWARD`'s count: each open region 2 units more
    (`open_regions_peak`)."""
    return open_regions_peak(items, last=2, other=2)


DEPARTURES = every_region(
    REENTRANT_BACKWARD,
    "paddle/distributed/fleet/recompute/recompute.py:376 (3.3.1), RecomputeFunction."
    "backward's paddle.autograd.backward over the rerun's outputs",
    reentrant_peak,
)


def block(x: paddle.Tensor, w1, b1, w2, b2) -> paddle.Tensor:  # (B, F) -> (B, F)
    """`relu(x @ w1 + b1) @ w2 + b2`, each `linear` one matmul and its bias."""
    linear = paddle.nn.functional.linear  # x @ W + b, W (in, out)
    return linear(paddle.nn.functional.relu(linear(x, w1, b1)), w2, b2)


def _region(inner: Callable) -> Callable:
    return lambda x, *params: recompute(inner, x, *params)


def place(placement: Placement) -> Callable[..., paddle.Tensor]:
    """`run(x, *params)`: the placement's blocks and regions (4 parameters a block, in order)."""
    wanted = placement.used_policies() - {""}
    if wanted:
        policy = sorted(wanted)[0]
        raise ValueError(f"placement: policy {policy!r} is not expressible in paddle: {_NO_POLICY}")
    return stacked(placement.items, block, lambda region: _region)


def vjp(
    run: Callable, params: Sequence[paddle.Tensor], x: paddle.Tensor, cotangent: Any, wrt: str
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """`(y, gradients)` as numpy arrays: `run(x, *params).backward(cotangent)` with respect to
    the parameters (`wrt="params"`, x data) or to x (`wrt="x"`, the parameters frozen: no
    parameter gradient made). Every `.grad` is freed again before it returns, and the tensors'
    `stop_gradient` put back: a call leaves nothing behind for the next one's baseline."""
    if wrt not in ("params", "x"):
        raise ValueError(f"wrt must be 'params' or 'x', got {wrt!r}")
    leaves = list(params) if wrt == "params" else [x]
    tensors = [x, *params]
    before = [t.stop_gradient for t in tensors]
    try:
        for tensor in tensors:
            tensor.stop_gradient = not any(tensor is leaf for leaf in leaves)
        y = run(x, *params)
        y.backward(cotangent)
        return y.numpy(), tuple(leaf.grad.numpy() for leaf in leaves)  # copies: .grad is freed
    finally:
        for tensor, stop in zip(tensors, before, strict=True):
            tensor.clear_gradient(False)  # freed, not zeroed
            tensor.stop_gradient = stop


def from_numpy(array: np.ndarray) -> paddle.Tensor:
    """Paddle's tensor for the bench's data: a float32 copy on the CPU, no gradient."""
    return paddle.to_tensor(np.array(array, np.float32, order="C"), place=paddle.CPUPlace())


def versions() -> dict[str, str]:
    """The installed paddlepaddle and the device it runs on."""
    return {**installed_versions(("paddlepaddle",)), "device": paddle.device.get_device()}
