"""Test ports for the precision tier: float32 MLPs that differ only in how they sum, and
lower-precision ones. numpy only; not shipped.

Each port computes the MLP and its VJP with float32 rounding at every step,
summing every dot product in its own order (`ORDERS`). The precision tier
must pass every float32 one on every input, and fail the lower-precision
ones (`LOW_PRECISION`) at D = F = 256 and 1024.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from implementations.contract import (
    BackwardRecord,
    Grads,
    Implementation,
    Params,
    check_features,
    check_seed,
    check_sizes,
    check_x,
)
from implementations.stacks.numpy import canonical_params

F32 = np.float32


def _f32(a) -> np.ndarray:
    return np.asarray(a, F32)


def round_mantissa(a, bits: int) -> np.ndarray:
    """float32 rounded to `bits` explicit mantissa bits (nearest, ties to even), kept in float32.

    10 is TF32's mantissa (and float16's), 7 bfloat16's. The exponent range
    stays float32's, so only the precision changes.
    """
    drop = 23 - bits
    raw = np.asarray(a, F32).view(np.uint32).astype(np.uint64)
    half = (1 << (drop - 1)) - 1
    rounded = (raw + half + ((raw >> drop) & 1)) & ~np.uint64((1 << drop) - 1)
    out = rounded.astype(np.uint32).view(F32)
    return np.where(np.isfinite(a), out, a).astype(F32)


def to_float16(a) -> np.ndarray:
    """float32 through float16 and back: 10 mantissa bits and float16's range."""
    with np.errstate(over="ignore"):
        return np.asarray(a, F32).astype(np.float16).astype(F32)


# --- sums: rows of `terms` (n, F) added up in float32, each way ----------------------


def _loop(terms: np.ndarray, reverse: bool = False) -> np.ndarray:
    acc = np.zeros(terms.shape[1:], F32)
    rows = range(terms.shape[0] - 1, -1, -1) if reverse else range(terms.shape[0])
    for i in rows:
        acc = acc + terms[i]  # float32 + float32: one rounding
    return acc


def _pairwise(terms: np.ndarray) -> np.ndarray:
    while terms.shape[0] > 1:
        if terms.shape[0] % 2:
            terms = np.concatenate([terms, np.zeros_like(terms[:1])])
        terms = terms[0::2] + terms[1::2]
    return terms[0] if terms.shape[0] else np.zeros(terms.shape[1:], F32)


def _blocked(terms: np.ndarray, block: int) -> np.ndarray:
    partial = [_loop(terms[i : i + block]) for i in range(0, terms.shape[0], block)]
    return _loop(np.stack(partial)) if partial else np.zeros(terms.shape[1:], F32)


def _lanes(terms: np.ndarray, lanes: int) -> np.ndarray:
    # What a SIMD kernel does: `lanes` running sums, element i into lane i % lanes.
    pad = (-terms.shape[0]) % lanes
    padded = np.concatenate([terms, np.zeros((pad, *terms.shape[1:]), F32)])
    by_lane = padded.reshape(-1, lanes, *terms.shape[1:])
    acc = _loop(by_lane)  # (lanes, F)
    return _pairwise(acc)


def _kahan(terms: np.ndarray) -> np.ndarray:
    total = np.zeros(terms.shape[1:], F32)
    carry = np.zeros_like(total)
    for row in terms:
        y = row - carry
        t = total + y
        carry = (t - total) - y
        total = t
    return total


def matvec(v: np.ndarray, m: np.ndarray, order: str) -> np.ndarray:
    """`v @ m` in float32, `(n,) @ (n, F) -> (F,)`, summed in `order`."""
    v, m = _f32(v), _f32(m)
    if order == "numpy":
        return v @ m  # BLAS sgemv: its own blocking and lanes
    if order == "float64":
        return (v.astype(np.float64) @ m.astype(np.float64)).astype(F32)
    if order == "fma":  # every step one fused multiply-add: product exact, one rounding
        acc = np.zeros(m.shape[1], F32)
        for i in range(v.shape[0]):
            acc = (acc + np.float64(v[i]) * m[i].astype(np.float64)).astype(F32)
        return acc
    terms = v[:, None] * m  # (n, F): each product rounded once
    sums: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "loop": _loop,
        "reverse": lambda t: _loop(t, reverse=True),
        "pairwise": _pairwise,
        "blocked16": lambda t: _blocked(t, 16),
        "blocked128": lambda t: _blocked(t, 128),
        "lanes8": lambda t: _lanes(t, 8),
        "kahan": _kahan,
    }
    return sums[order](terms)


ORDERS = (
    "loop",
    "reverse",
    "pairwise",
    "blocked16",
    "blocked128",
    "lanes8",
    "kahan",
    "fma",
    "float64",
    "numpy",
)


# --- the MLP and its VJP, with a rounding step for the lower-precision ones ------------


def mlp_forward(params: Params, x, order: str, operands: Callable = _f32, bias_scale=1.0):
    """`(h, a, y)` in float32: every matmul operand through `operands`."""
    w1, b1, w2, b2 = (_f32(p) for p in (params.w1, params.b1, params.w2, params.b2))
    b1, b2 = _f32(b1 * F32(bias_scale)), _f32(b2 * F32(bias_scale))
    h = matvec(operands(x), operands(w1), order) + b1
    a = np.maximum(h, F32(0))
    y = matvec(operands(a), operands(w2), order) + b2
    return h, a, y


def mlp_vjp(params: Params, x, c, order: str, operands: Callable = _f32, bias_scale=1.0):
    """Backpropagation in float32, the backward matmuls summed in `order` as well."""
    w1, w2 = _f32(params.w1), _f32(params.w2)
    x, c = _f32(x), _f32(c)
    h, a, _ = mlp_forward(params, x, order, operands, bias_scale)
    g_a = matvec(operands(c), operands(w2).T, order)  # (F,): sum over the outputs
    g_h = np.where(h > 0, g_a, F32(0))
    scale = F32(bias_scale)
    return Grads(
        w1=np.outer(x, g_h).astype(F32),
        b1=_f32(g_h * scale),
        w2=np.outer(a, c).astype(F32),
        b2=_f32(c * scale),
        x=matvec(operands(g_h), operands(w1).T, order),
    )


class NumpyPort(Implementation):
    """A float32 (or lower) MLP in numpy, summing in one order. Evidence: none (not needed)."""

    framework = "numpy"

    def __init__(self, order: str, operands: Callable = _f32, bias_scale: float = 1.0, name=""):
        self.order, self.operands, self.bias_scale = order, operands, bias_scale
        self.name = name or f"numpy_{order}"

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        return canonical_params(seed, dim, features)

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        return mlp_forward(params, x, self.order, self.operands, self.bias_scale)[2]

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        return mlp_vjp(params, x, cotangent, self.order, self.operands, self.bias_scale)

    def backward_record(self, params, x, *, checkpoint=True) -> BackwardRecord:
        raise NotImplementedError

    def exercise_record(self, seed, x, features) -> BackwardRecord:
        raise NotImplementedError

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> np.ndarray:
        seed, features, x = check_seed(seed), check_features(features), check_x(x)
        check_sizes(x.shape[0], features)
        return self.forward(canonical_params(seed, x.shape[0], features), x)

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def from_numpy(self, array: np.ndarray) -> np.ndarray:
        return np.array(array)


def float32_ports() -> list[NumpyPort]:
    """One float32 port per summation order."""
    return [NumpyPort(order) for order in ORDERS]


def _tf32(a):
    return round_mantissa(a, 10)


def _bf16(a):
    return round_mantissa(a, 7)


class _WeightsOnly:
    """Round the weights (2-D operands) only; x and activations stay float32."""

    def __init__(self, rounding: Callable):
        self.rounding = rounding

    def __call__(self, a):
        a = _f32(a)
        return self.rounding(a) if a.ndim == 2 else a


class Float16Inputs(NumpyPort):
    """x arrives as float16 (as from a float16 data pipeline); the rest is float32. Its
    gradient leaves as float16 too, as the transpose of a cast does."""

    def forward(self, params, x, *, checkpoint=True):
        return super().forward(params, to_float16(x))

    def vjp(self, params, x, cotangent, *, checkpoint=True):
        grads = super().vjp(params, to_float16(x), cotangent).as_dict()
        return Grads(**{**grads, "x": to_float16(grads["x"])})


def low_precision_ports() -> list[NumpyPort]:
    """The arithmetic the precision tier must reject: TF32, float16 x, bfloat16 weights, a bias
    off by 1e-4, and bfloat16 throughout."""
    return [
        NumpyPort("numpy", _tf32, name="tf32_matmul"),
        NumpyPort("numpy", _WeightsOnly(_bf16), name="bf16_weights_only"),
        Float16Inputs("numpy", name="f16_inputs"),
        NumpyPort("numpy", bias_scale=1.0001, name="bias_off_by_1e-4"),
        NumpyPort("numpy", _bf16, name="bf16_everything"),
    ]
