"""Values of a schedule against the canonical's, within the error-analysis bound of a stack.

`conformance.checking.tolerance` bounds one float32 block, forward and VJP, on one row of data
given its exact input and cotangent. A stack of L blocks chains them: block i's input and
cotangent are themselves off by what the blocks before (forward) and after (backward) let
through, carried to first order through |W1| and |W2| (relu is 1-Lipschitz; its mask taken
from the exact pre-activation), and each block adds its own rounding at the exact values. Two
implementations differ by at most twice one's bound. The check runs on one row (B = 1), where
the one-block analysis applies as it stands.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from implementations.bench_case import Data, Values
from implementations.contract import Params

from ..checking.tolerance import analyse_forward, vjp_bounds

#: The values check's data: one row (the analysis is per row) of width 32.
VALUES_BATCH, VALUES_FEATURES = 1, 32
NAMES = ("w1", "b1", "w2", "b2")


def values_data(depth: int, seed: int = 0) -> Data:
    """The values check's data at `depth`, one row. Worst-case bounds multiply by |W1| |W2|
    per block, so the bench's He-scaled weights (a gain near 30 in absolute value) would make
    them vacuous past a few blocks: here each kernel's columns are non-negative and sum to 1
    (gain 1, the bound grows with L, not exponentially), x is positive, and b1 closes about a
    quarter of the units, so relu's mask still matters."""
    rng = np.random.default_rng(seed)
    f = VALUES_FEATURES

    def kernel() -> np.ndarray:
        w = rng.uniform(0.0, 1.0, (f, f))
        return (w / w.sum(0)).astype(np.float32)  # (in, out), each column sums to 1

    blocks = [
        (
            kernel(),
            rng.uniform(-1.5, 0.5, f).astype(np.float32),
            kernel(),
            rng.uniform(0.0, 1.0, f).astype(np.float32),
        )
        for _ in range(depth)
    ]
    x = rng.uniform(0.5, 1.5, (VALUES_BATCH, f)).astype(np.float32)
    cotangent = rng.standard_normal((VALUES_BATCH, f)).astype(np.float32)
    return Data(blocks, x, cotangent)


@dataclass(frozen=True)
class Verdict:
    """`within`: every value within its bound; `worst`: the largest |difference| / bound."""

    within: bool
    worst: float


def bounds(data: Data) -> Values:
    """Per element, the largest difference two float32 implementations of the stack can show:
    the output and each block's parameter gradients (canonical layout)."""
    if data.x.shape[0] != 1:
        raise ValueError(
            f"the stack bound is per row: data.x must have one row, got {data.x.shape}"
        )
    params = [Params(*b) for b in data.blocks]
    xs, errors = [np.asarray(data.x[0], np.float64)], [np.zeros(data.x.shape[1])]
    for p in params:  # forward: exact inputs and one implementation's error in each
        local = analyse_forward(p, xs[-1])
        carried = (errors[-1] @ np.abs(p.w1.astype(np.float64))) @ np.abs(p.w2.astype(np.float64))
        xs.append(local.y)
        errors.append(local.e2 + carried * (1.0 + 1e-6))
    cotangent = np.asarray(data.cotangent[0], np.float64)
    carried_back = np.zeros_like(cotangent)  # one implementation's error in the cotangent
    grads: list[tuple[np.ndarray, ...]] = []
    for i in reversed(range(len(params))):
        p, x, e_x = params[i], xs[i], errors[i]
        w1, w2 = np.abs(p.w1.astype(np.float64)), np.abs(p.w2.astype(np.float64))
        h = x @ p.w1.astype(np.float64) + p.b1
        open_units = h > 0
        a = np.maximum(h, 0.0)
        g_a = p.w2.astype(np.float64) @ cotangent
        g_h = np.where(open_units, g_a, 0.0)
        e_a = e_x @ w1  # the implementation's a off by this, carried from its input
        e_gh = np.where(open_units, w2 @ carried_back, 0.0)
        local = vjp_bounds(p, x.astype(np.float32), cotangent.astype(np.float32))
        carried = {  # both implementations' carried errors: twice one's
            "w1": 2.0 * (np.outer(np.abs(x), e_gh) + np.outer(e_x, np.abs(g_h))),
            "b1": 2.0 * e_gh,
            "w2": 2.0 * (np.outer(a, carried_back) + np.outer(e_a, np.abs(cotangent))),
            "b2": 2.0 * carried_back,
        }
        grads.append(tuple(local[n] + carried[n] * (1.0 + 1e-6) for n in NAMES))
        carried_back = local["x"] / 2.0 + w1 @ e_gh
        cotangent = p.w1.astype(np.float64) @ g_h
    grads.reverse()
    return Values(2.0 * errors[-1][None, :], grads)


def compare(found: Values, canonical: Values, bound: Values) -> Verdict:
    """Whether `found` equals `canonical` within `bound`, and the worst |difference| / bound."""
    if len(found.grads) != len(canonical.grads):
        return Verdict(False, float("inf"))
    pairs = [(found.y, canonical.y, bound.y)]
    for mine, theirs, limit in zip(found.grads, canonical.grads, bound.grads, strict=True):
        pairs.extend(zip(mine, theirs, limit, strict=True))
    worst = 0.0
    for mine, theirs, limit in pairs:
        mine, theirs = np.asarray(mine, np.float64), np.asarray(theirs, np.float64)
        if mine.shape != theirs.shape or not np.all(np.isfinite(mine)):
            return Verdict(False, float("inf"))
        limit = np.broadcast_to(np.asarray(limit, np.float64), mine.shape)
        difference = np.abs(mine - theirs)
        tight = np.where(limit > 0, difference / np.where(limit > 0, limit, 1.0), np.inf)
        worst = max(worst, float(np.max(np.where(difference == 0, 0.0, tight))))
    return Verdict(worst <= 1.0, worst)
