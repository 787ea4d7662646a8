"""The precision tier: each port's error against the exact result, in units of float32 rounding.

The rigorous bound (`tolerance`) never flakes, but it is worst-case: it
grows like `n u` while a float32 port's error grows like `sqrt(n) u`, so
at D = F = 256 a TF32 or float16 port hides under it. This tier measures
instead how far a port is from the **exact** (float64) result on the same
data, element by element, in units of the rounding a float32 computation
of that data is expected to show, and takes the **median** over the
elements of each result, so one unlucky element cannot decide. The
analysis behind the scales and the threshold, with its assumptions and the
measurements that check it, is docs/PRECISION.md; in short:

- **Scale.** An element is a sum of n terms `q_i` (products `x_i w_i` and a
  bias). Under the standard probabilistic model of rounding (each rounding
  error has mean zero given what came before; Higham & Mary 2019) and with
  weights of random sign (the strategy draws them so), a float32 sum in any
  data-independent order has `E[err^2] <= u^2 n ||q||_2^2`: every term is
  rounded once as a product and at most n - 1 times inside a partial sum,
  whose expected square is at most `||q||^2`. That is the summation-order
  allowance, `sqrt(n)`: reached by a plain loop, not by pairwise sums.
  Errors of one layer reach the next through its weights, and add in
  quadrature. `sigma` below is this RMS scale, element by element.
- **Statistic.** `z = |port - exact| / sigma` per element (after a floor
  for underflow); its median over the elements of a result.
- **Threshold.** With `E[z^2] <= s` per element (s = 4 leaves room for what
  the elements share) Chebyshev gives `P(z > t) <= s / t^2`, and if the
  elements' errors are independent (given the layer before), at least half
  of N exceed t with probability at most `(4 s / t^2)^(N/2)`. Setting that
  to `FALSE_ALARM` gives `t(N) = 2 sqrt(s) FALSE_ALARM^(-1/N)`: 4.4 for
  N = 256, 4.1 for N = 1024. A float32 port's median z is about 0.3 at
  worst (a plain loop); TF32 (operands rounded to 11 bits) gives about
  `2^13 / sqrt(n)`, 140 at n = 1024.
- **Bits.** The effective precision is measured on a second scale, `rho`,
  one rounding per term (no order allowance): `bits = -log2(median(err /
  rho) / CALIBRATION)`, calibrated so that rounding every term once at p
  bits reads p. float32 reads 19 to 24 (the summation order costs up to
  half of log2 n), TF32 about 10.5, float16 inputs 11, bfloat16 8.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from implementations.contract import Params

from .tolerance import TINY, U, analyse_forward

#: Each result's false-alarm probability, under the assumptions above.
FALSE_ALARM = 1e-12
#: Room in each element's second moment, `E[z^2] <= SECOND_MOMENT`, for what
#: elements share (the layer before, a relu unit's side).
SECOND_MOMENT = 4.0
#: `median |sum_i e_i q_i| / ||q||_2` when every term is rounded once to p
#: bits, in units of `2^-p` (mantissas spread as real data spread them).
CALIBRATION = 0.29
#: How many ulps a port's own init may differ from the numpy canonical init
#: by: INIT_ULPS from Flax's each way. As a relative error: 4 ulp <= 8 u.
E2E_PARAM_UNITS = 8.0
#: The fewest groups a verdict is drawn from: fewer make t(N) too loose to matter.
MIN_GROUPS = 4
#: An outer-product gradient is judged on at most this many of its rows (d/dw1) or
#: columns (d/dw2), spread evenly: the elements along that axis share one
#: factor's error, so more add little but time (a million elements at 1024).
SHARED_AXIS_SAMPLE = 128


def threshold(groups: int) -> float:
    """t(N): the largest median z a float32 result of N independent groups may show.

    `P(median z > t(N)) <= (4 s / t^2)^(N/2) = FALSE_ALARM`, with s = `SECOND_MOMENT`.
    """
    if groups < 1:
        return math.inf
    return 2.0 * math.sqrt(SECOND_MOMENT) * FALSE_ALARM ** (-1.0 / groups)


def bits_from(median_ratio: float) -> float:
    """Effective bits from `median(err / rho)`: p when every term is rounded once at p bits."""
    if median_ratio == 0:
        return math.inf
    if not math.isfinite(median_ratio):
        return 0.0
    return max(0.0, -math.log2(median_ratio / CALIBRATION))


@dataclass(frozen=True)
class Result:
    """One result of one example (the output, a gradient), as the precision tier sees it.

    **Arguments:**

    - `name`: which result ("output", "d/dw1", ...).
    - `median_z`: the median over the judged elements of `err / sigma`.
    - `threshold`: `t(groups)`; `median_z` above it fails.
    - `bits`: the effective precision in bits (inf: every judged element exact).
    - `judged`: how many elements took part (elements that need no
      arithmetic take part only if they are wrong).
    - `groups`: how many independent groups they form (columns of an
      outer product share the error of one factor).
    - `worst`: the index of the largest z, and `worst_z` its value.
    """

    name: str
    median_z: float
    threshold: float
    bits: float
    judged: int
    groups: int
    worst: tuple[int, ...] | None = None
    worst_z: float = 0.0

    @property
    def ratio(self) -> float:
        """`median_z / threshold`: above 1 fails."""
        if self.median_z == 0:
            return 0.0
        return self.median_z / self.threshold

    @property
    def failed(self) -> bool:
        return self.ratio > 1.0


def judge(
    name: str,
    actual: np.ndarray,
    exact: np.ndarray,
    sigma: np.ndarray,
    rho: np.ndarray,
    floor: np.ndarray | float = 0.0,
    group_axis: int | None = None,
) -> Result:
    """Measure one result against its exact value.

    **Arguments:**

    - `actual`: the port's result; `exact`: the float64 exact one.
    - `sigma`: the RMS error a float32 computation may show, per element
      (absolute; 0 where no arithmetic is involved: there the port must be exact).
    - `rho`: the size of the terms, `||q||_2` per element (absolute), for the bits:
      rounding every term once at p bits gives `err ~ CALIBRATION 2^-p rho`.
    - `floor`: an absolute error ignored everywhere (underflow).
    - `group_axis`: for an outer product, the axis along which elements
      share one factor's error (the groups are the other axis's entries).
    """
    actual = np.asarray(actual)
    exact = np.asarray(exact, np.float64)
    if actual.shape != exact.shape:
        raise ValueError(f"{name}: shape {actual.shape}, expected {exact.shape}")
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(actual.astype(np.float64) - exact)
    err = np.where(np.isfinite(actual), err, np.inf)
    err = np.maximum(err - floor, 0.0)
    sigma = np.broadcast_to(np.asarray(sigma, np.float64), err.shape)
    rho = np.broadcast_to(np.asarray(rho, np.float64), err.shape)
    judged = (sigma > 0) | (err > 0)
    count = int(judged.sum())
    if count == 0:
        return Result(name, 0.0, threshold(0), math.inf, 0, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sigma > 0, err / sigma, np.where(err > 0, np.inf, 0.0))
        r = np.where(rho > 0, err / rho, np.where(err > 0, np.inf, 0.0))
    groups = count if group_axis is None else int(judged.any(axis=group_axis).sum())
    z_judged = z[judged]
    worst = np.unravel_index(int(np.argmax(np.where(judged, z, -1.0))), z.shape)
    return Result(
        name=name,
        median_z=float(np.median(z_judged)),
        threshold=threshold(groups) if groups >= MIN_GROUPS else math.inf,
        bits=bits_from(float(np.median(r[judged]))),
        judged=count,
        groups=groups,
        worst=tuple(int(i) for i in worst),
        worst_z=float(z[worst]),
    )


def describe_failure(result: Result) -> str:
    """Why a result fails, in words, with the numbers a reader needs to judge it."""
    worst = result.worst[0] if result.worst and len(result.worst) == 1 else result.worst
    return (
        f"median error {result.median_z:.3g} sigma > threshold {result.threshold:.3g} sigma "
        f"over {result.judged} elements ({result.groups} independent groups): effective "
        f"precision {result.bits:.1f} bits, where float32 arithmetic measures 19 to 24 "
        f"(TF32 and float16 about 11, bfloat16 8). sigma is the RMS error float32 "
        f"arithmetic may show at each element, whatever its summation order; the worst "
        f"element, index {worst}, is {result.worst_z:.3g} sigma off"
    )


# ---------------------------------------------------------------------------
# The exact results and their scales
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Scales:
    """The exact forward pass of one set of parameters on one x, and its error scales.

    Vectors only, float64 (so the bank keeps them small); squared scales
    are in units of `u^2`.

    **Arguments:**

    - `h`, `a`, `y`: exact pre-activation, activation, output.
    - `kinks`: units whose pre-activation lies within the rigorous bound of
      zero: a float32 port may put them on either side.
    - `q1`: `||q1_j||^2`, the terms of `h_j` (`x_i w1_ij` and `b1_j`).
    - `var_h`: `n1 q1`, n1 = D + 1: `E[err h_j^2] / u^2`.
    - `var_y`, `unit_y`: y's squared scales, with and without the order allowance.
    - `floor_h`, `floor_y`: absolute underflow allowances.
    """

    h: np.ndarray
    a: np.ndarray
    y: np.ndarray
    kinks: np.ndarray
    q1: np.ndarray
    var_h: np.ndarray
    var_y: np.ndarray
    unit_y: np.ndarray
    floor_h: np.ndarray
    floor_y: np.ndarray


def forward_scales(params: Params, x: np.ndarray, *, extra_units: float = 0.0) -> Scales:
    """Exact forward pass and scales. `extra_units`: a relative error of that many u on
    every parameter, counted as one more rounding per term (for a port's own init)."""
    analysis = analyse_forward(params, x)
    w1, b1, w2, b2 = (p.astype(np.float64) for p in (params.w1, params.b1, params.w2, params.b2))
    x = np.asarray(x, np.float64)
    dim, features = w1.shape
    w1_sq, w2_sq = w1 * w1, w2 * w2
    extra = extra_units**2
    h, a = analysis.h, analysis.a
    kinks = analysis.kinks
    q1 = (x * x) @ w1_sq + b1 * b1  # (F,)
    q2 = (a * a) @ w2_sq + b2 * b2  # (F,)
    var_h = (dim + 1 + extra) * q1
    # The previous layer's error reaches y_k through w2[:, k]: every unit
    # counts for the threshold (a closed unit's error is 0, never more);
    # only units that can be open count for the bits.
    var_y = var_h @ w2_sq + (features + 1 + extra) * q2
    may_open = (h > 0) | kinks
    unit_y = np.where(may_open, q1, 0.0) @ w2_sq + q2
    floor_h = TINY * (dim + 1 + np.abs(x).sum() + np.abs(w1).sum(0))
    floor_y = floor_h @ np.abs(w2) + TINY * (
        features + 1 + (a + analysis.e1).sum() + np.abs(w2).sum(0)
    )
    return Scales(h, a, analysis.y, kinks, q1, var_h, var_y, unit_y, floor_h, floor_y)


@dataclass(frozen=True)
class Reference:
    """What the precision property compares a port with: exact results and scales.

    - `forward`: the shared parameters' `Scales`.
    - `g_a`: exact `dL/da = w2 @ c`; `q_ga`: `||w2_j * c||^2`; `floor_ga`.
    - `opened`: the units open in the exact pass (`h > 0`), and for those
      sides `dx`, its squared scales `var_x`, `unit_x` and `floor_x`: a port
      that takes the other side at a kink gets them corrected for its units
      (made here once: they are sums over all of w1).
    - `end_to_end`: the canonical init's `Scales` for the exercise (None: not checked).
    """

    forward: Scales
    g_a: np.ndarray
    q_ga: np.ndarray
    floor_ga: np.ndarray
    opened: np.ndarray
    dx: np.ndarray
    var_x: np.ndarray
    unit_x: np.ndarray
    floor_x: np.ndarray
    end_to_end: Scales | None = None


def reference(
    params: Params, x: np.ndarray, cotangent: np.ndarray, exercise_params: Params | None = None
) -> Reference:
    """The exact results of a forward pass, a VJP and (given its parameters) the exercise."""
    w1, w2 = params.w1.astype(np.float64), params.w2.astype(np.float64)
    c = np.asarray(cotangent, np.float64)
    features = w2.shape[0]
    forward = forward_scales(params, x)
    g_a = w2 @ c  # (F,)
    q_ga = (w2 * w2) @ (c * c)
    floor_ga = TINY * (features + 1 + np.abs(w2).sum(1) + np.abs(c).sum())
    opened = forward.h > 0
    per_unit = _dx_terms(np.where(opened, 1.0, 0.0), g_a, q_ga, floor_ga, features)
    dx, var_x, unit_x, floor_x = _dx_sums(w1, per_unit)
    end_to_end = None
    if exercise_params is not None:
        end_to_end = forward_scales(exercise_params, x, extra_units=E2E_PARAM_UNITS)
    return Reference(forward, g_a, q_ga, floor_ga, opened, dx, var_x, unit_x, floor_x, end_to_end)


def _dx_terms(weight, g_a, q_ga, floor_ga, features: int) -> tuple[np.ndarray, ...]:
    # dL/dx = w1 @ dL/dh, an F-term sum of the port's dL/dh, whose own error
    # comes from dL/da = w2 @ c: per unit, what w1 (w1^2, |w1|) carries.
    g_h = weight * g_a
    return (
        g_h,
        weight * features * (g_a * g_a + q_ga),  # own sum (F terms) + dL/dh's error
        weight * (g_a * g_a + q_ga),
        weight * floor_ga,
        weight * np.abs(g_a),
    )


def _dx_sums(w1: np.ndarray, per_unit: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    g_h, var, unit, floor, size = per_unit
    w1_sq, w1_abs = w1 * w1, np.abs(w1)
    floor_x = w1_abs @ floor + TINY * (w1_abs.sum(1) + size.sum())
    return w1 @ g_h, w1_sq @ var, w1_sq @ unit, floor_x


def _sqrt_u(var: np.ndarray) -> np.ndarray:
    return U * np.sqrt(var)


def judge_output(name: str, actual: np.ndarray, scales: Scales) -> Result:
    """The forward output y against its exact value."""
    sigma, rho = _sqrt_u(scales.var_y), np.sqrt(scales.unit_y)
    return judge(name, actual, scales.y, sigma, rho, scales.floor_y)


def judge_grads(
    grads: Mapping[str, np.ndarray],
    ref: Reference,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
) -> list[Result]:
    """Every gradient of a VJP against its exact value.

    At a relu kink (a unit whose pre-activation lies within the rigorous
    bound of zero) a float32 port may take either side; its own d/db1 shows
    which, and the exact gradients are made with that side. Elsewhere the
    side is the exact one, and a unit on the wrong side counts as an error.
    """
    fwd = ref.forward
    x64 = np.asarray(x, np.float64)
    c = np.asarray(cotangent, np.float64)
    features = c.shape[0]
    db1 = np.asarray(grads["b1"], np.float64)
    took_open = np.abs(db1) > np.abs(ref.g_a) / 2
    opened = np.where(fwd.kinks, took_open, fwd.h > 0)  # (F,) the port's side
    g_h = np.where(opened, ref.g_a, 0.0)
    var_gh = np.where(opened, features * ref.q_ga, 0.0)  # E[err dL/dh_j^2] / u^2
    unit_gh = np.where(opened, ref.q_ga, 0.0)
    floor_gh = np.where(opened, ref.floor_ga, 0.0)
    rows = _spread(x64.shape[0])  # the rows of d/dw1 judged
    ax = np.abs(x64[rows])
    results = [
        judge("d/db1", db1, g_h, _sqrt_u(var_gh), np.sqrt(unit_gh), floor_gh + TINY),
        # dL/dw1 = outer(x, dL/dh): one product on top of dL/dh's error.
        judge(
            "d/dw1",
            np.asarray(grads["w1"])[rows],
            np.outer(x64[rows], g_h),
            U * np.outer(ax, np.sqrt(var_gh + g_h * g_h)),
            np.outer(ax, np.sqrt(unit_gh + g_h * g_h)),
            np.outer(ax, floor_gh) + TINY * (1 + np.add.outer(ax, np.abs(g_h))),
            group_axis=0,
        ),
    ]
    # dL/dw2 = outer(a, c): a carries the forward pass's error. A unit
    # surely closed has a = 0 exactly in any float32 port.
    may_open = (fwd.h > 0) | fwd.kinks
    var_a = np.where(may_open, fwd.var_h + fwd.a * fwd.a, 0.0)
    unit_a = np.where(may_open, fwd.q1 + fwd.a * fwd.a, 0.0)
    cols = _spread(c.shape[0])  # the columns of d/dw2 judged
    ac = np.abs(c[cols])
    results.append(
        judge(
            "d/dw2",
            np.asarray(grads["w2"])[:, cols],
            np.outer(fwd.a, c[cols]),
            U * np.outer(np.sqrt(var_a), ac),
            np.outer(np.sqrt(unit_a), ac),
            np.outer(np.where(may_open, fwd.floor_h, 0.0), ac)
            + TINY * (1 + np.add.outer(fwd.a, ac)),
            group_axis=1,
        )
    )
    # dL/db2 = c: no arithmetic at all.
    results.append(judge("d/db2", grads["b2"], c, 0.0, 0.0, TINY))
    # dL/dx = w1 @ dL/dh: the exact side's sums, corrected where the port took
    # the other side at a kink (a few units: a few columns of w1).
    moved = np.flatnonzero(opened != ref.opened)
    dx, var_x, unit_x, floor_x = ref.dx, ref.var_x, ref.unit_x, ref.floor_x
    if moved.size:
        change = np.where(opened[moved], 1.0, -1.0)
        terms = _dx_terms(change, *(v[moved] for v in (ref.g_a, ref.q_ga, ref.floor_ga)), features)
        delta = _dx_sums(params.w1[:, moved].astype(np.float64), terms)
        dx, var_x, unit_x = dx + delta[0], var_x + delta[1], unit_x + delta[2]
        floor_x = floor_x + np.abs(delta[3])
        var_x, unit_x = np.maximum(var_x, 0.0), np.maximum(unit_x, 0.0)
    results.append(judge("d/dx", grads["x"], dx, _sqrt_u(var_x), np.sqrt(unit_x), floor_x))
    return results


def _spread(size: int, most: int = SHARED_AXIS_SAMPLE) -> np.ndarray:
    """At most `most` indices in `range(size)`, evenly spread, first and last included."""
    if size <= most:
        return np.arange(size)
    return np.unique(np.linspace(0, size - 1, most).round().astype(int))
