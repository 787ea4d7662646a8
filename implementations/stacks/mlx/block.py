"""The exercise's block in MLX, and the one builder that places it over L blocks. Imports mlx.

- `block(w1, b1, w2, b2, x)`: `relu(x @ w1 + b1) @ w2 + b2` as `nn.Linear` spells it, the
  bias fused into `mx.addmm` (its one primitive per matmul, `AddMM`); kernels `(in, out)` as
  Flax's, so the bench's arrays go in as they are (`nn.Linear` holds the transpose; a
  transpose is a view in MLX and changes no figure).
- `place(placement)`: `run(x, *params)`, the blocks with `mx.checkpoint` where the placement
  puts a region (what `mlx.nn.utils.checkpoint` wraps for a module), nested as it nests
  (parameters flat, four per block).
- `vjp(run, params, x, cotangent, wrt)`: the call every measurement watches: `mx.vjp`, then
  the output evaluated (the forward pass), then the gradients (the backward pass). MLX is
  lazy: evaluated in one `mx.eval` the two passes interleave in MLX's own order, and there
  is no backward pass to measure apart.

Declarations (`implementations.measuring.driver` reads them): `mx.checkpoint` takes no policy
(`POLICIES` is empty), what MLX cannot express and why (`NOT_EXPRESSIBLE`), and where its
figures depart from the model (`DEPARTURES`: none, as no count model predicts its peak).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import mlx.core as mx
import numpy as np

from implementations.contract import installed_versions
from implementations.measuring.placement import Placement
from implementations.schedules import flat_stack

FRAMEWORK = "mlx"
#: Policy -> how a region runs it: none, mx.checkpoint takes no policy.
POLICIES: dict[str, str] = {}
#: Every region of a placement, in words.
#: The plan's code (`python -m conformance plan`): a placement's regions with MLX's own API,
#: `$placement` the placement as nested lists (a list a region, an int a block run plain).
PLACE_CODE = """import mlx.core as mx

def run(items, params, x):  # block(p, x): your block; params: one p per block
    for item in items:
        if isinstance(item, list):
            x = mx.checkpoint(lambda p, x, item=item: run(item, p, x))(params, x)
        else:
            x = block(params[item], x)
    return x

y = run($placement, params, x)"""
#: No `INTERNALS_UNITS` (a, what a taped block keeps beside its input): MLX's is no constant.
#: `none`'s whole peak grows 3.94 units a block from L = 4 to 8 (B = 256, F = 64), 1.49 a block
#: at L = 64 (docs/bench-schedules.json): its one lazy evaluation keeps what its graph holds.
REGION = "mx.checkpoint of a function of its blocks' parameters and its input"
NOT_EXPRESSIBLE = {
    "save-mm": "mx.checkpoint has no policy",
    "save_dots": "mx.checkpoint has no policy",
    "save_named": "mx.checkpoint has no policy",
    "offload_dots": "MLX has unified memory and no offload",
    "budget": "MLX has no memory-budget solver: mx.checkpoint takes no budget",
}
#: mlx/transforms.cpp (0.32) `eval_impl` builds the evaluation's tape of the gradients' whole
#: lazy graph breadth first, up to `MLX_BFS_MAX_WIDTH` (default 20) arrays a level, and runs it
#: from its far end on an asynchronous stream: the reruns need no cotangent, and do not run
#: region by region as the backward pass reaches them. Measured at L = 16, B = 256, F = 64 (x's
#: gradient): none 46.5 units (model 32), every 36 to 38 (17), binomial(2) 29 to 30 (4); with
#: the width 1 (depth first) all 44 to 53. No count model: the growing part the model counts
#: is not observable (the instrument's `PEAK_NOT_SPLIT`), so `bench --schedules` shows MLX's
#: peak as not observable, the whole peak in its reason, and judges only its counts.
DEPARTURES: dict[str, Any] = {}


def block(w1, b1, w2, b2, x):  # (B, D) -> (B, F)
    """`relu(x @ w1 + b1) @ w2 + b2`, each matmul `mx.addmm` with its bias."""
    a = mx.maximum(mx.addmm(b1, x, w1), 0)
    return mx.addmm(b2, a, w2)


def place(placement: Placement) -> Callable[..., mx.array]:
    """`run(x, *params)`: the placement's blocks and regions (4 parameters a block, in order)."""
    wanted = sorted(placement.used_policies() - {""})
    if wanted:
        reason = NOT_EXPRESSIBLE.get(wanted[0], "mx.checkpoint has no policy")
        raise ValueError(f"placement: policy {wanted[0]!r} is not expressible in MLX: {reason}")
    return flat_stack(placement.items, lambda x, *p: block(*p, x), mx.checkpoint)


def vjp(
    run: Callable, params: Sequence[mx.array], x: mx.array, cotangent: mx.array, wrt: str
) -> tuple[mx.array, list[mx.array]]:
    """`(y, gradients)`, evaluated: `mx.vjp` of `run` with respect to the parameters
    (`wrt="params"`, x held fixed) or to x (`wrt="x"`), pulling back `cotangent`; the output
    evaluated first (the forward pass), then the gradients (the backward pass)."""
    if wrt == "params":
        outputs, grads = mx.vjp(lambda *p: [run(x, *p)], list(params), [cotangent])
    elif wrt == "x":
        outputs, grads = mx.vjp(lambda x: [run(x, *params)], [x], [cotangent])
    else:
        raise ValueError(f"wrt must be 'params' or 'x', got {wrt!r}")
    mx.eval(outputs)
    mx.eval(grads)
    return outputs[0], grads


def from_numpy(array: np.ndarray) -> mx.array:
    """MLX's array for the bench's data: a float32 copy, evaluated (a source of the graph)."""
    converted = mx.array(np.ascontiguousarray(array, np.float32))
    mx.eval(converted)
    return converted


def versions() -> dict[str, str]:
    """The installed mlx version and the device it runs on."""
    return {**installed_versions(("mlx", "mlx-cpu")), "device": str(mx.default_device())}
