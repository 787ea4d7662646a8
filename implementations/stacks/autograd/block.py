"""The exercise's block in autograd, and the one builder that places it over L blocks.
Imports autograd and numpy.

- `block(w1, b1, w2, b2, x)`: `relu(x @ w1 + b1) @ w2 + b2` on numpy arrays, kernels `(in, out)`
  as Flax's (a batch `(B, D)` works as a vector `(D,)`); `checkpointed_block`: the same under
  the deferred `remat.checkpoint`, made once here.
- `relu`: a primitive of its own, because `autograd.numpy.maximum`'s VJP splits the gradient
  at a tie (0.5 at `h == 0`) where Flax's relu gives 0, and because `np.where`'s VJP fills
  with float64 zeros (the gradient would leave float32).
- `place(placement)`: `run(x, *params)`, the blocks with a region where the placement puts
  one, each region `remat.checkpoint`, nested as the placement nests (parameters flat, four
  per block). `vjp(run, params, x, cotangent, wrt)`: the call every measurement watches.

Declarations (`implementations.measuring.driver` reads them): autograd's checkpoint takes no
policy (`POLICIES` is empty), what it cannot express and why (`NOT_EXPRESSIBLE`), and where
its figures depart from the model, with the count (`DEPARTURES`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd import make_vjp
from autograd.extend import defvjp, primitive

from implementations.contract import installed_versions
from implementations.measuring.departure import every_region
from implementations.measuring.placement import Placement
from implementations.schedules import Departure, Region

from .arrays import matmul_precision
from .remat import checkpoint

FRAMEWORK = "autograd"
#: Policy -> how a region runs it: none, autograd.checkpoint takes no policy.
POLICIES: dict[str, str] = {}
#: Every region of a placement, in words.
REGION = (
    "the deferred checkpoint (remat.checkpoint: autograd.checkpoint's recipe, traced in backward)"
)
#: The plan's code (`python -m conformance plan`): a placement's regions with the deferred
#: checkpoint (autograd.checkpoint 1.9.1 traces its region in the forward pass: remat.py),
#: `$placement` the placement as nested lists (a list a region, an int a block run plain).
PLACE_CODE = """from implementations.stacks.autograd.remat import checkpoint

def run(*args, items):  # block(*p, x): your block; args: every block's params, then x
    *params, x = args
    for item in items:
        if isinstance(item, list):
            x = region(*params, x, items=item)
        else:
            x = block(*params[4 * item : 4 * item + 4], x)
    return x

region = checkpoint(run)  # once: autograd keeps every primitive for good
y = run(*params, x, items=$placement)"""
#: a: what a taped block keeps beside its input, in B x F float32 tensors: relu's output (`none`'s
#: peak grows 2.09 units a block at B = 256, F = 64: tracemalloc sees the trace's objects too).
INTERNALS_UNITS = 1.0
NOT_EXPRESSIBLE = {
    "save-mm": "autograd.checkpoint has no policy",
    "save_dots": "autograd.checkpoint has no policy",
    "save_named": "autograd.checkpoint has no policy",
    "offload_dots": "autograd runs on numpy in host memory: nowhere to offload",
    "budget": "autograd has no memory-budget solver: its checkpoint takes no budget",
}
#: autograd/core.py (1.9.1) `backward_pass` walks `toposort(end_node)`, whose child counts hold
#: every node of the trace until the pass returns; a rerun's trace is a pass of its own. The
#: count (`Departure.peak_units`): nothing of a level freed while its regions rerun, one unit
#: more per open level (its node's cotangent). Measured at L = 16, B = 256, F = 64: every
#: schedule's growing peak is the prediction plus 4 (the model's slack: output, cotangents).
_TAPE_TO_THE_END = Departure(
    "autograd's backward_pass keeps every node of its trace until it returns (toposort's "
    "child counts): a level's blocks stay alive while its regions rerun, and each open "
    "level holds its node's cotangent",
    held_per_level=1,
    tape_to_the_end=True,
)
DEPARTURES = every_region(
    _TAPE_TO_THE_END.reason,
    "autograd/core.py:25 backward_pass over autograd/util.py:21 toposort, its child_counts "
    "and outgrads freed only as the walk ends (autograd 1.9.1)",
    _TAPE_TO_THE_END.peak_units,
)


@primitive
def relu(h: np.ndarray) -> np.ndarray:  # (..., F) -> (..., F)
    return np.maximum(h, np.zeros((), h.dtype))


def _relu_vjp(ans: np.ndarray, h: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    # Reads the output a: a > 0 exactly where h > 0, so relu'(0) = 0 as in Flax, and a is
    # kept anyway (dW2 = a^T g). A select, as jax.nn.relu's: g's non-finite values stay out.
    return lambda g: np.where(ans > 0, g, np.zeros((), g.dtype))


defvjp(relu, _relu_vjp)


def block(w1, b1, w2, b2, x):
    """`relu(x @ w1 + b1) @ w2 + b2`: `(D,) -> (F,)` (or `(B, D) -> (B, F)`)."""
    # d1, h and a stay named until the block returns, as they always have: the figures
    # measured are of this block (d1 or h freed at once takes a unit off a rerun's peak).
    d1 = anp.dot(x, w1)  # (D,) @ (D, F) -> (F,)
    h = d1 + b1
    a = relu(h)
    return anp.dot(a, w2) + b2  # (F,) @ (F, F) -> (F,)


#: The block under the deferred checkpoint: keeps its five inputs, reruns itself in backward.
checkpointed_block = checkpoint(block)


def _run(*args, items: tuple):
    """The items in order over `(*params, x)`: a block index runs plain, a region is the
    checkpoint primitive. x comes last, as the block takes it: the order the pullback returns
    the gradients in, and so what is alive at the backward's peak (x first reads up to 1.75
    units off at B = 1024, F = 256)."""
    *params, x = args
    start = 0
    for item in items:
        count = 4 * len(item.blocks) if isinstance(item, Region) else 4
        if isinstance(item, Region):
            x = _region(*params[start : start + count], x, items=item.items)
        else:
            x = block(*params[start : start + count], x)
        start += count
    return x


#: Every region's primitive (autograd's tables keep each primitive for good: made once).
_region = checkpoint(_run)


def place(placement: Placement) -> Callable[..., Any]:
    """`run(x, *params)`: the placement's blocks and regions (4 parameters a block, in order)."""
    wanted = placement.used_policies() - {""}
    if wanted - set(POLICIES):
        raise ValueError(
            f"placement: policy {sorted(wanted)[0]!r} is not expressible in autograd: "
            f"{NOT_EXPRESSIBLE.get(sorted(wanted)[0], 'autograd.checkpoint has no policy')}"
        )
    items = placement.items
    return lambda x, *params: _run(*params, x, items=items)


def vjp(
    run: Callable, params: Sequence[np.ndarray], x: np.ndarray, cotangent: np.ndarray, wrt: str
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """`(y, gradients)`: `make_vjp` of `run` with respect to the parameters (`wrt="params"`,
    x held fixed) or to x (`wrt="x"`), and its pullback of `cotangent`: the call measured."""
    if wrt == "params":
        pullback, y = make_vjp(lambda *p: run(x, *p), tuple(range(len(params))))(*params)
    elif wrt == "x":
        pullback, y = make_vjp(lambda x: run(x, *params))(x)
    else:
        raise ValueError(f"wrt must be 'params' or 'x', got {wrt!r}")
    grads = pullback(cotangent)
    return y, tuple(grads) if wrt == "params" else (grads,)


def from_numpy(array: np.ndarray) -> np.ndarray:
    """autograd's array for the bench's data: a C-ordered float32 numpy copy."""
    return np.array(array, np.float32, order="C")


def versions() -> dict[str, str]:
    """The installed autograd and numpy, and the BLAS numpy calls."""
    return {**installed_versions(("autograd", "numpy")), "blas": matmul_precision()["blas"]}
