"""The tolerance model: per-element error bounds from a forward error analysis.

Two float32 implementations of the MLP may sum in different orders, fuse
multiply-adds or not, and flush subnormals or not. Each one's result lies
within a bound `e` of the exact (real-number) result, so two of them differ
by at most `2e`. The bound comes from the standard model of float32
arithmetic (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1):

- a sum of n products `s = sum_i x_i w_i`, any order, FMA or not:
  `|fl(s) - s| <= gamma_n * sum_i |x_i| |w_i|`, `gamma_n = n u / (1 - n u)`,
  `u = 2**-24`;
- plus an absolute term for underflow, `TINY` per operation, where XLA's
  CPU backend flushes subnormals to zero and torch does not.

Layer 1 gives `e1 = gamma_{D+1} (|x| @ |W1| + |b1|)` on the pre-activation
`h`. relu is 1-Lipschitz, so the activation inherits `e1`, which layer 2
carries through `|W2|` before adding its own rounding. The VJP is bounded
the same way, step by step.

**ReLU kinks.** Where the exact pre-activation lies within `e1` of zero, an
implementation may land on either side, and the gradient through that unit
may be `0` or the full upstream gradient. Only there is either side
accepted: the bound for the affected entries grows by exactly the jump.

The analysis runs in float64 on the actual data, so a bound is as tight as
the data allow. It never flakes: every implementation that computes in
float32 meets it by construction, whatever its summation order.

**What it can see.** A worst-case bound grows with n: at D = F = 256 it is
about 1.5e-3 of the output's scale, some 2000 times the difference measured
between XLA and torch. bfloat16 arithmetic breaks it at every size tested
(1 to 300). float16 arithmetic and a bias off by 1e-3 break it up to
D = F = 128 and hide under it at 256, so the suite catches those bugs on
the smaller shapes that every run draws (tests/core/checking/test_tolerance.py measures
this; the mutants prove it end to end). A probabilistic bound (~sqrt(n) u)
would be some 20 times tighter, but correlated rounding, which structured
inputs such as constant vectors produce, brings it within a factor of two
of failing a correct port: it could flake, so it is not used here. The
precision tier (`conformance.checking.precision`, property (i)) is that statistical
bound, made safe: on data it draws itself (weights of random sign), judged
by a median over each result's elements, with a stated false-alarm bound
(docs/PRECISION.md). It catches TF32-, float16- and bfloat16-class
arithmetic at every size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from implementations.contract import Params

U = 2.0**-24  # float32 unit roundoff
ULP_REL = 2.0**-23  # one float32 ulp, relative to the value
TINY = 2.0**-126  # error of one flushed subnormal: the smallest normal float32
# A port's own seeded init may differ from Flax's by this many ulps per
# parameter: XLA's float32 arithmetic is reproduced exactly only where the
# same operations fuse (see implementations/stacks/numpy/init.py).
INIT_ULPS = 2


def gamma(n: int) -> float:
    """`n u / (1 - n u)`: the relative error bound of an n-term float32 sum of products."""
    return n * U / (1.0 - n * U)


def _abs_matvec(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    return np.abs(v) @ np.abs(m)


@dataclass(frozen=True)
class ForwardAnalysis:
    """The exact forward pass (float64) and one float32 implementation's error bounds.

    **Arguments:**

    - `h`, `a`, `y`: exact pre-activation, activation and output.
    - `e1`: bound on one implementation's error in `h` (and so in `a`).
    - `e2`: bound on one implementation's error in `y`.
    - `kinks`: units whose exact pre-activation lies within `e1` of zero.
    """

    h: np.ndarray
    a: np.ndarray
    y: np.ndarray
    e1: np.ndarray
    e2: np.ndarray
    kinks: np.ndarray


def analyse_forward(params: Params, x: np.ndarray, *, param_ulps: float = 0.0) -> ForwardAnalysis:
    """Bound one float32 implementation of the forward pass on this data.

    **Arguments:**

    - `params`, `x`: the data, as float32.
    - `param_ulps`: how many ulps the implementation's own parameters may
      differ from `params` by (for end-to-end runs, where each port makes its
      own init); 0 when the parameters are shared.
    """
    w1, b1, w2, b2 = (p.astype(np.float64) for p in (params.w1, params.b1, params.w2, params.b2))
    x = np.asarray(x, np.float64)
    dim, features = w1.shape
    perturb = param_ulps * ULP_REL

    h = x @ w1 + b1  # (D,) -> (F,)
    magnitude1 = _abs_matvec(x, w1) + np.abs(b1)
    e1 = (gamma(dim + 1) + perturb) * magnitude1 + TINY * (
        dim + 1 + np.abs(x).sum() + np.abs(w1).sum(0)
    )
    e1 *= 1.0 + 1e-9  # room for the float64 reference's own rounding

    a = np.maximum(h, 0.0)
    y = a @ w2 + b2  # (F,) -> (F,)
    magnitude2 = _abs_matvec(a + e1, w2) + np.abs(b2)
    e2 = (
        _abs_matvec(e1, w2)
        + (gamma(features + 1) + perturb) * magnitude2
        + TINY * (features + 1 + (a + e1).sum() + np.abs(w2).sum(0))
    )
    e2 *= 1.0 + 1e-9
    return ForwardAnalysis(h=h, a=a, y=y, e1=e1, e2=e2, kinks=np.abs(h) <= e1)


def forward_bound(params: Params, x: np.ndarray, *, param_ulps: float = 0.0) -> np.ndarray:
    """The largest `|y_port - y_canonical|` two float32 implementations can show, per element."""
    return 2.0 * analyse_forward(params, x, param_ulps=param_ulps).e2


@dataclass(frozen=True)
class VJPAnalysis:
    """One float32 VJP's error bounds, and what a relu-kink side flip does.

    **Arguments:**

    - `same_side`: per gradient, the largest difference two implementations
      can show when they take the same side at every kink (2e).
    - `g_a`: the exact dL/da, `W2 @ c`: what a unit passes back when open.
    - `e_ga`: one implementation's error in it.
    - `kinks`: units whose pre-activation lies within its error of zero.
    """

    same_side: dict[str, np.ndarray]
    g_a: np.ndarray
    e_ga: np.ndarray
    kinks: np.ndarray


def analyse_vjp(params: Params, x: np.ndarray, cotangent: np.ndarray) -> VJPAnalysis:
    """Bound one float32 VJP on this data, step by step."""
    fwd = analyse_forward(params, x)
    w1, w2 = params.w1.astype(np.float64), params.w2.astype(np.float64)
    x = np.abs(np.asarray(x, np.float64))
    c = np.abs(np.asarray(cotangent, np.float64))
    features = w2.shape[0]
    slack = 1.0 + 1e-9

    # dL/dW2[j, k] = a_j c_k, from the implementation's own a (off by e1).
    a_hat = fwd.a + fwd.e1
    e_w2 = np.outer(fwd.e1, c) + U * np.outer(a_hat, c) + TINY * (1 + np.add.outer(a_hat, c))

    # dL/da = W2 @ c, an F-term sum.
    g_a = w2 @ np.asarray(cotangent, np.float64)
    e_ga = gamma(features) * (np.abs(w2) @ c) + TINY * (features + 1 + np.abs(w2).sum(1) + c.sum())
    # dL/dh = dL/da where the unit is open. At a kink it may be open in one
    # implementation and closed in the other: its error is e_ga either way.
    open_units = (fwd.h > 0) | fwd.kinks
    e_gh = np.where(open_units, e_ga, 0.0)
    g_h = np.where(open_units, np.abs(g_a) + e_ga, 0.0)  # a bound on |dL/dh| itself

    # dL/dW1[i, j] = x_i (dL/dh)_j: one rounding on top of dL/dh's error.
    e_w1 = np.outer(x, e_gh) + U * np.outer(x, g_h) + TINY * (1 + np.add.outer(x, g_h))
    # dL/dx = W1 @ dL/dh, an F-term sum.
    e_x = np.abs(w1) @ e_gh + gamma(features) * (np.abs(w1) @ g_h)
    e_x += TINY * (features + 1 + np.abs(w1).sum(1) + g_h.sum())

    same_side = {
        "w1": 2.0 * e_w1 * slack,
        "b1": 2.0 * e_gh * slack + 2.0 * TINY,
        "w2": 2.0 * e_w2 * slack,
        "b2": np.full(features, 2.0 * TINY),  # dL/db2 = c: no arithmetic at all
        "x": 2.0 * e_x * slack,
    }
    return VJPAnalysis(same_side=same_side, g_a=g_a, e_ga=e_ga, kinks=fwd.kinks)


def _kink_allowance(params: Params, x: np.ndarray, jump: np.ndarray) -> dict[str, np.ndarray]:
    # What flipping the units in `jump` (their |dL/da|, 0 elsewhere) can add.
    x = np.abs(np.asarray(x, np.float64))
    w1 = np.abs(params.w1.astype(np.float64))
    features = w1.shape[1]
    zeros = {"w2": 0.0, "b2": 0.0}
    return zeros | {
        "w1": np.outer(x, jump) * (1 + U),
        "b1": jump,
        "x": (w1 @ jump) * (1 + gamma(features)),
    }


def vjp_bounds(params: Params, x: np.ndarray, cotangent: np.ndarray) -> dict[str, np.ndarray]:
    """The largest difference two float32 VJPs can show, per element, whatever sides they take.

    Used where the two sides cannot be told apart (the golden vectors' stored
    bounds); `vjp_comparison` is tighter when both gradients are at hand.
    """
    vjp = analyse_vjp(params, x, cotangent)
    jump = np.where(vjp.kinks, np.abs(vjp.g_a), 0.0)
    allowance = _kink_allowance(params, x, jump)
    return {name: bound + allowance[name] for name, bound in vjp.same_side.items()}


def vjp_comparison(
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    grads: dict[str, np.ndarray],
    reference: dict[str, np.ndarray],
    *,
    analysis: VJPAnalysis | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per gradient, the difference that relu-kink side flips explain, and the bound on the rest.

    At a kink unit j each implementation passes back either 0 or dL/da_j.
    Where |dL/da_j| is well above its error, the b1 gradients show which side
    each took; the flip's exact effect is then taken out of the comparison,
    so "either side" is accepted at kinks only and nothing in between. Where
    it is not, the bound grows by the flip's largest effect instead.

    `analysis` is `analyse_vjp(params, x, cotangent)`, if already made.

    **Returns:** `{name: (shift, bound)}`: check `|grads - reference - shift| <= bound`.
    """
    vjp = analysis if analysis is not None else analyse_vjp(params, x, cotangent)
    decidable = vjp.kinks & (np.abs(vjp.g_a) > 4.0 * vjp.e_ga)
    ambiguous = vjp.kinks & ~decidable

    def opened(b1: np.ndarray) -> np.ndarray:
        return np.abs(np.asarray(b1, np.float64)) > np.abs(vjp.g_a) / 2

    flip = np.where(decidable, opened(grads["b1"]).astype(float) - opened(reference["b1"]), 0.0)
    moved = flip * vjp.g_a  # (F,): what each flip changes dL/dh by, port minus reference
    x64 = np.asarray(x, np.float64)
    shifts = {
        "w1": np.outer(x64, moved),
        "b1": moved,
        "w2": np.zeros_like(vjp.same_side["w2"]),
        "b2": np.zeros_like(vjp.same_side["b2"]),
        "x": params.w1.astype(np.float64) @ moved,
    }
    allowance = _kink_allowance(params, x, np.where(ambiguous, np.abs(vjp.g_a) + vjp.e_ga, 0.0))
    return {name: (shifts[name], bound + allowance[name]) for name, bound in vjp.same_side.items()}


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many float32 values lie between a and b (0 when equal; +0 and -0 count as equal)."""

    def ordered(v: np.ndarray) -> np.ndarray:
        bits = np.asarray(v, np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    return np.abs(ordered(a) - ordered(b))
