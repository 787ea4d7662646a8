"""The tolerance model's own tests: sound for every float32 order, tight enough for real bugs."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking.tolerance import (
    U,
    analyse_forward,
    forward_bound,
    gamma,
    ulp_distance,
    vjp_bounds,
    vjp_comparison,
)
from implementations.contract import Params
from tests.support import reference

# --- float32 implementations, simulated in numpy, one rounding per operation ---


def _matvec(x, w, order: str):
    """x @ w in float32, summing in the given order; "fma" rounds product+sum once."""
    x, w = x.astype(np.float32), w.astype(np.float32)
    if order == "pairwise":
        return (x[:, None] * w).sum(axis=0, dtype=np.float32)
    rows = range(x.shape[0]) if order == "forward" else reversed(range(x.shape[0]))
    acc = np.zeros(w.shape[1], np.float32)
    for i in rows:
        if order == "fma":
            acc = (acc.astype(np.float64) + np.float64(x[i]) * w[i].astype(np.float64)).astype(
                np.float32
            )
        else:
            acc = (acc + x[i] * w[i]).astype(np.float32)
    return acc


def _forward(params: Params, x, order: str, round_to=None):
    """One float32 (or, with round_to, lower-precision) implementation of the MLP."""
    r = round_to or (lambda a: np.asarray(a, np.float32))
    h = r(r(_matvec(r(x), r(params.w1), order)) + r(params.b1))
    a = np.maximum(h, 0).astype(np.float32)
    return r(r(_matvec(a, r(params.w2), order)) + r(params.b2)).astype(np.float32)


def _bf16(a):
    """Round float32 to bfloat16 (nearest even), kept in float32."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def _f16(a):
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


ORDERS = ["forward", "reverse", "pairwise", "fma"]


def _case(seed, dim, features, x_scale=1.0):
    rng = np.random.default_rng(seed)
    return reference.random_params(rng, dim, features), (x_scale * rng.normal(size=dim)).astype(
        np.float32
    )


def test_gamma():
    assert gamma(1) == pytest.approx(U)
    assert gamma(257) > 257 * U


@pytest.mark.parametrize(("dim", "features"), [(1, 1), (3, 4), (16, 16), (64, 33), (256, 256)])
@pytest.mark.parametrize("x_scale", [1.0, 1e-30, 1e12])
def test_every_float32_order_lies_within_the_bound(dim, features, x_scale):
    for seed in range(5):
        params, x = _case(seed, dim, features, x_scale)
        fwd = analyse_forward(params, x)
        outputs = {order: _forward(params, x, order) for order in ORDERS}
        for order, y in outputs.items():
            assert np.all(np.abs(y - fwd.y) <= fwd.e2), order
        bound = forward_bound(params, x)
        for a in outputs.values():
            for b in outputs.values():
                assert np.all(np.abs(a.astype(np.float64) - b) <= bound)


def test_subnormal_inputs_flushed_to_zero_stay_within_the_bound():
    params, _ = _case(0, 8, 8)
    x = np.full(8, 1e-40, np.float32)  # subnormal
    flushed = _forward(params, np.zeros(8, np.float32), "forward")
    kept = _forward(params, x, "forward")
    assert np.all(np.abs(flushed.astype(np.float64) - kept) <= forward_bound(params, x))


# bfloat16 breaks the bound at every size tested; float16 up to D = F = 128:
# at 256 the rigorous bound (about 1.5e-3 relative there) admits float16's
# error, and the suite rejects such a port on its smaller shapes.
LOW_PRECISION = [
    *[("bf16", _bf16, shape) for shape in [(3, 4), (16, 16), (64, 64), (256, 256), (7, 300)]],
    *[("f16", _f16, shape) for shape in [(3, 4), (16, 16), (64, 64), (128, 128), (7, 300)]],
]


@pytest.mark.parametrize(("label", "round_to", "shape"), LOW_PRECISION)
def test_low_precision_compute_breaks_the_bound(label, round_to, shape):
    params, x = _case(1, *shape)
    low = _forward(params, x, "forward", round_to=round_to)
    full = _forward(params, x, "forward")
    assert np.any(np.abs(low.astype(np.float64) - full) > forward_bound(params, x))


@pytest.mark.parametrize(("dim", "features"), [(1, 1), (16, 16), (64, 64), (128, 128), (7, 300)])
def test_a_bias_off_by_a_thousandth_breaks_the_bound(dim, features):
    # Up to D = F = 128 with unit-scale biases; at 256 the error sits at about
    # 0.94 of the bound, and the suite relies on its smaller shapes.
    params, x = _case(2, dim, features)
    off = Params(params.w1, params.b1 * 1.001, params.w2, params.b2 * 1.001)
    y_off = _forward(off, x, "forward")
    y = _forward(params, x, "forward")
    assert np.any(np.abs(y_off.astype(np.float64) - y) > forward_bound(params, x))


def _grads(params: Params, x, c, mask):
    """Exact float64 gradients with a chosen relu mask."""
    w1, b1, w2 = (p.astype(np.float64) for p in (params.w1, params.b1, params.w2))
    x64, c64 = x.astype(np.float64), c.astype(np.float64)
    a = np.maximum(x64 @ w1 + b1, 0)
    g_h = (w2 @ c64) * mask
    return {"w1": np.outer(x64, g_h), "b1": g_h, "w2": np.outer(a, c64), "b2": c64, "x": w1 @ g_h}


def _kink_case():
    # Integer data: some pre-activations are exactly zero.
    params = Params(
        w1=np.array([[1.0, -1.0, 2.0], [1.0, 1.0, -1.0]]),
        b1=np.array([-3.0, 0.0, 1.0]),
        w2=np.array([[1.0, 2.0, 0.5], [-1.0, 1.0, 1.0], [2.0, -2.0, 1.0]]),
        b2=np.array([0.5, 0.0, -0.5]),
    )
    x = np.array([1.0, 2.0], np.float32)  # h = [0, 1, 1]
    c = np.array([1.0, -2.0, 0.5], np.float32)
    return params, x, c


def test_the_bound_accepts_either_side_of_a_kink():
    params, x, c = _kink_case()
    fwd = analyse_forward(params, x)
    assert fwd.kinks.tolist() == [True, False, False]
    bounds = vjp_bounds(params, x, c)
    closed = _grads(params, x, c, np.array([0.0, 1.0, 1.0]))
    opened = _grads(params, x, c, np.array([1.0, 1.0, 1.0]))
    for name in bounds:
        assert np.all(np.abs(closed[name] - opened[name]) <= bounds[name]), name


def test_the_bound_rejects_a_flipped_unit_away_from_a_kink():
    params, x, c = _kink_case()
    bounds = vjp_bounds(params, x, c)
    right = _grads(params, x, c, np.array([0.0, 1.0, 1.0]))
    wrong = _grads(params, x, c, np.array([0.0, 0.0, 1.0]))  # unit 1 has h = 1: no kink
    assert np.any(np.abs(right["b1"] - wrong["b1"]) > bounds["b1"])
    assert np.any(np.abs(right["w1"][:, 1] - wrong["w1"][:, 1]) > bounds["w1"][:, 1])


@pytest.mark.parametrize(("dim", "features"), [(3, 4), (16, 16), (64, 64)])
def test_float32_vjps_lie_within_the_bound(dim, features):
    rng = np.random.default_rng(dim)
    params, x = _case(dim, dim, features)
    c = rng.normal(size=features).astype(np.float32)
    bounds = vjp_bounds(params, x, c)
    exact = reference.vjp(params, x, c)
    # A float32 backward pass, written out with float32 rounding at every step.
    w1, b1, w2 = (p.astype(np.float32) for p in (params.w1, params.b1, params.w2))
    h = (_matvec(x, w1, "forward") + b1).astype(np.float32)
    a = np.maximum(h, 0)
    g_h = (_matvec(c, w2.T, "reverse") * (h > 0)).astype(np.float32)
    ours = {
        "w1": np.outer(x, g_h).astype(np.float32),
        "b1": g_h,
        "w2": np.outer(a, c).astype(np.float32),
        "b2": c,
        "x": _matvec(g_h, w1.T, "pairwise"),
    }
    for name in bounds:
        assert np.all(np.abs(ours[name].astype(np.float64) - exact[name]) <= bounds[name] / 2), name


def test_ulp_distance():
    one = np.float32(1.0)
    assert ulp_distance(one, np.nextafter(one, np.float32(2))) == 1
    assert ulp_distance(np.float32(0.0), np.float32(-0.0)) == 0
    assert ulp_distance(np.float32(-1e-45), np.float32(1e-45)) == 2
    assert ulp_distance(np.float32(1.0), np.float32(1.0)) == 0


def _exceeds(params, x, c, grads, reference) -> set[str]:
    comparison = vjp_comparison(params, x, c, grads, reference)
    return {
        name
        for name, (shift, bound) in comparison.items()
        if np.any(np.abs(grads[name] - reference[name] - shift) > bound)
    }


def test_the_comparison_takes_a_side_flip_out_exactly():
    params, x, c = _kink_case()
    closed = _grads(params, x, c, np.array([0.0, 1.0, 1.0]))
    opened = _grads(params, x, c, np.array([1.0, 1.0, 1.0]))
    assert _exceeds(params, x, c, opened, closed) == set()
    assert _exceeds(params, x, c, closed, opened) == set()
    # The flip is taken out exactly, so what is left must be rounding-sized.
    comparison = vjp_comparison(params, x, c, opened, closed)
    shift, bound = comparison["b1"]
    assert np.abs(opened["b1"] - closed["b1"] - shift).max() <= bound.max() < 1e-5


def test_the_comparison_rejects_a_value_between_the_two_sides():
    params, x, c = _kink_case()
    closed = _grads(params, x, c, np.array([0.0, 1.0, 1.0]))
    halfway = _grads(params, x, c, np.array([0.5, 1.0, 1.0]))
    assert {"b1", "w1", "x"} <= _exceeds(params, x, c, halfway, closed)
