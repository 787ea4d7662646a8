"""Float32 arithmetic as XLA:CPU does it: `fma_f32`, `log_f32`, `log1p_f32`, `erf_inv_f32`.

Every step rounds to float32 in XLA's order. Where the compiled code
multiplies and then adds, LLVM fuses the two into one FMA instruction
(x86-64 with FMA3, aarch64), which rounds once; `fma_f32` emulates that at
exactly those places (read off the LLVM IR and the machine code of the
compiled init). `log` and `log1p` are XLA's own polynomials (`log_f32`,
`log1p_f32`), not libm's, and denormals flush to zero. Fusing matters most
in `uniform` (`sampling`): its multiply-add cancels near 0, where an unfused
one is off by up to 6e5 ulps (about 1e-7 absolute). Elsewhere (`log1p`,
`erf_inv`) an unfused version is off by at most 3 ulps. Numpy only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

F32 = np.float32

# The private functions below take float32 arrays of one shape (scalars only
# as coefficients) and leave the numpy error state to their caller; the
# public ones accept anything and set it.

_TINY = np.finfo(F32).tiny
_LOW29, _HALFWAY29 = np.uint64(2**29 - 1), np.uint64(2**28)


def _fma(a: np.ndarray, b: Any, c: Any) -> np.ndarray:
    # The product of two float32s is exact in float64. The sum then rounds
    # once to float64 and again to float32. Two roundings can differ from
    # one only where the float64 sum lies exactly halfway between two
    # float32s (its 29 extra bits are 100...0), or in float32's subnormal
    # range; those few elements are redone with round-to-odd, which is exact.
    total = a.astype(np.float64)
    total *= b
    total += c
    out = total.astype(F32)
    suspect = (total.view(np.uint64) & _LOW29) == _HALFWAY29
    suspect |= np.abs(out) < _TINY
    if suspect.any():
        a, b, c = (np.broadcast_to(v, a.shape)[suspect] for v in (a, b, c))
        out[suspect] = _round_to_odd_fma(a, b, c).astype(F32)
    return out


def _round_to_odd_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    # TwoSum gives the exact error of `total = a*b + c` in float64. Where the
    # sum was inexact and its last bit is even, step one float64 ulp towards
    # the exact value (round to odd); rounding that to float32 is then the
    # correctly rounded result, since 53 >= 24 + 2.
    product = a.astype(np.float64) * b
    c = c.astype(np.float64)
    total = product + c
    virtual = total - product
    error = (product - (total - virtual)) + (c - virtual)
    even = (total.view(np.uint64) & np.uint64(1)) == 0
    towards = np.where(error > 0, np.inf, -np.inf)
    return np.where((error != 0) & even, np.nextafter(total, towards), total)


def fma_f32(a: Any, b: Any, c: Any) -> np.ndarray:
    """`a * b + c` in float32 with a single rounding, as an FMA instruction computes it."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, F32) for v in (a, b, c)))
    with np.errstate(over="ignore"):
        out = _fma(a.ravel(), b.ravel(), c.ravel())
    return out.reshape(a.shape)


def _horner(t: np.ndarray, coefficients: tuple[np.float32, ...]) -> np.ndarray:
    # c0*t**n + ... + cn, highest degree first, one FMA per step.
    poly = _fma(t, coefficients[0], coefficients[1])
    for c in coefficients[2:]:
        poly = _fma(poly, t, c)
    return poly


def _piecewise(mask: np.ndarray, x: np.ndarray, if_true, if_false) -> np.ndarray:
    # XLA evaluates both branches and selects. Evaluating each branch on its
    # own elements only gives the same values for less work.
    if mask.all():
        return if_true(x)
    if not mask.any():
        return if_false(x)
    out = np.empty(x.shape, F32)
    out[mask] = if_true(x[mask])
    out[~mask] = if_false(x[~mask])
    return out


def _flush_denormals(x: np.ndarray) -> np.ndarray:
    # XLA:CPU runs with denormals flushed to zero (FTZ and DAZ): a subnormal
    # input counts as a zero of its sign, and a subnormal result becomes one.
    return np.where(np.abs(x) < _TINY, np.copysign(F32(0), x), x)


def _f32_from_bits(bits: int) -> np.float32:
    return np.array(bits, np.uint32).view(F32)[()]


# Eigen's `plog_float` (Cephes' logf), which XLA:CPU inlines for `log`.
_LOG_P = tuple(
    _f32_from_bits(bits)
    for bits in (
        0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF,
        0xBE2AAE50, 0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA,
    )
)  # fmt: skip
_LOG_Q1 = _f32_from_bits(0xB95E8083)  # ln 2 = Q2 + Q1, split in two
_LOG_Q2 = _f32_from_bits(0x3F318000)
_SQRT_HALF = _f32_from_bits(0x3F3504F3)


def _log(z: np.ndarray) -> np.ndarray:
    safe = np.where(z > _TINY, z, _TINY)
    bits = safe.view(np.uint32)
    # z = mantissa * 2**exponent, with the mantissa in [0.5, 1).
    exponent = ((bits >> np.uint32(23)).astype(np.int32) - 126).astype(F32)
    mantissa = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(F32)
    # Recentre around 1: below sqrt(1/2), take 2 * mantissa and one less exponent.
    small = mantissa < _SQRT_HALF
    x = (mantissa - F32(1)) + np.where(small, mantissa, F32(0))
    exponent -= small
    x2 = x * x
    x3 = x2 * x
    p = _LOG_P
    y = _fma(_fma(x, p[0], p[1]), x, p[2])
    y1 = _fma(_fma(x, p[3], p[4]), x, p[5])
    y2 = _fma(_fma(x, p[6], p[7]), x, p[8])
    y = _fma(_fma(y, x3, y1), x3, y2)
    y = _fma(y, x3, exponent * _LOG_Q1)
    # x2 * 0.5 and exponent * Q2 are exact, so fusing them changes nothing.
    result = ((x - x2 * F32(0.5)) + y) + exponent * _LOG_Q2
    result[z == 0] = -np.inf
    result[z == np.inf] = np.inf
    result[(z < 0) | np.isnan(z)] = np.nan
    return result


def log_f32(z: Any) -> np.ndarray:
    """Natural log in float32 as XLA:CPU computes it: Eigen's `plog_float`, with FMAs."""
    z = np.asarray(z, F32)
    with np.errstate(invalid="ignore", over="ignore"):
        return _log(_flush_denormals(np.atleast_1d(z))).reshape(z.shape)


# XLA's `log1p` intrinsic (xla/codegen/intrinsic/log1p.cc), after Cephes.
_LOG1P_SMALL = F32(0.41421356237309504880)  # sqrt(2) - 1
_LOG1P_NUM = tuple(
    F32(c)
    for c in (
        4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
        2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
        2.0039553499201281259648e1,
    )
)  # fmt: skip
# The denominator's leading coefficient, 1, is implicit.
_LOG1P_DEN = tuple(
    F32(c)
    for c in (
        1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
        3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1,
    )
)  # fmt: skip


def _log1p_near_zero(y: np.ndarray) -> np.ndarray:
    # y - y**2/2 + y**3 * P(y)/Q(y); P and Q by Horner with FMAs. Q's first
    # step, 1*y + q1, is exact in the product, so a plain add.
    y2 = y * y
    denominator = y + _LOG1P_DEN[0]
    for c in _LOG1P_DEN[1:]:
        denominator = _fma(denominator, y, c)
    ratio = _horner(y, _LOG1P_NUM) / denominator
    return y + ((y * y2) * ratio - y2 * F32(0.5))  # y2 * 0.5 is exact: fused or not


def _log1p(y: np.ndarray) -> np.ndarray:
    result = _piecewise(np.abs(y) < _LOG1P_SMALL, y, _log1p_near_zero, lambda y: _log(y + F32(1)))
    return _flush_denormals(result)


def log1p_f32(y: Any) -> np.ndarray:
    """`log(1 + y)` in float32 as XLA:CPU computes it: a Cephes rational near 0, else `log`."""
    y = np.asarray(y, F32)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return _log1p(_flush_denormals(np.atleast_1d(y))).reshape(y.shape)


# chlo.erf_inv for float32 (M. Giles' approximation), as stablehlo expands it.
_ERF_INV_CENTRAL = tuple(
    F32(c)
    for c in (
        2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
        -0.00125372503, -0.00417768164, 0.246640727, 1.50140941,
    )
)  # fmt: skip
_ERF_INV_TAIL = tuple(
    F32(c)
    for c in (
        -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
        -0.0076224613, 0.00943887047, 1.00167406, 2.83297682,
    )
)  # fmt: skip


def _erf_inv(x: np.ndarray) -> np.ndarray:
    x = _flush_denormals(x)
    log = _log1p(x * -x)  # -w, with w = -log(1 - x**2)
    poly = _piecewise(
        log > F32(-5),  # w < 5; a NaN goes to the tail, as in XLA's select
        log,
        lambda log: _horner(F32(-2.5) - log, _ERF_INV_CENTRAL),
        lambda log: _horner(np.sqrt(-log) + F32(-3), _ERF_INV_TAIL),
    )
    poly[np.abs(x) == 1] = np.inf
    return _flush_denormals(x * poly)


def erf_inv_f32(x: Any) -> np.ndarray:
    """`jax.lax.erf_inv` in float32 on XLA:CPU: `x * P(w)` with `w = -log1p(-x*x)`.

    `P` is a degree-8 polynomial in `w - 2.5` where `w < 5`, else in
    `sqrt(w) - 3`, evaluated with FMAs. `erf_inv(+-1)` is `+-inf`, and it is
    NaN outside `[-1, 1]`.
    """
    x = np.asarray(x, F32)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return _erf_inv(np.atleast_1d(x)).reshape(x.shape)
