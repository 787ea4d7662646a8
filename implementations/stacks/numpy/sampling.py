"""jax's uniform, truncated normal and lecun normal, in float32 as XLA:CPU computes them.

(`jax/_src/random/core.py`, `jax/_src/nn/initializers.py`.) From the random
bits (`threefry`): their top 23 bits as a mantissa in `[1, 2)`, minus 1,
scaled into `[erf(lower/sqrt2), erf(upper/sqrt2))` (`uniform`); then
`sqrt2 * erf_inv(u)` (`xla_math`), clamped into the open interval
`(lower, upper)` with `nextafter` (`truncated_normal`); times
`sqrt(1/fan_in) / .87962566103423978` (`lecun_normal`). Numpy only.

**Speed.** The truncated normal of an element depends only on the 23 bits it
draws, and it is odd about the middle of their range. So for symmetric
bounds (lecun's are +-2), the first call computes its 2**22 + 1 outcomes
once (16 MiB, under a second) and every call looks them up (`_half_table`;
`tables` keeps it on disk between processes).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .tables import _read_table, _table_file, _write_table
from .threefry import random_bits
from .xla_math import F32, _erf_inv, _fma


def _mantissa_to_unit_float(mantissa: np.ndarray) -> np.ndarray:
    # 23 random bits under the exponent of 1.0: a float in [1, 2); minus 1 is exact.
    return (mantissa.astype(np.uint32) | np.uint32(0x3F800000)).view(F32) - F32(1)


def bits_to_unit_float(bits: Any) -> np.ndarray:
    """jax's uniform float32 in `[0, 1)` from uint32 bits: their top 23 bits as the mantissa."""
    return _mantissa_to_unit_float(np.asarray(bits, np.uint32) >> np.uint32(9))


def _scale_unit(unit: np.ndarray, minval: np.float32, maxval: np.float32) -> np.ndarray:
    # max(minval, unit * (maxval - minval) + minval), the multiply-add fused.
    return np.maximum(minval, _fma(unit, maxval - minval, minval))


def uniform(
    key: Any, shape: tuple[int, ...], minval: float = 0.0, maxval: float = 1.0
) -> np.ndarray:
    """`jax.random.uniform(key, shape, jnp.float32, minval, maxval)` on XLA:CPU."""
    unit = bits_to_unit_float(random_bits(key, shape)).ravel()
    with np.errstate(over="ignore"):
        return _scale_unit(unit, F32(minval), F32(maxval)).reshape(shape)


_SQRT2 = F32(np.sqrt(2))


@functools.lru_cache(maxsize=8)
def truncation_bounds(lower: float, upper: float) -> tuple[np.float32, ...]:
    """`(erf(lower/sqrt2), erf(upper/sqrt2), nextafter(lower, inf), nextafter(upper, -inf))`.

    XLA folds `erf` of these constants while compiling; `math.erf` rounded to
    float32 agrees with it (tested for the lecun bounds, +-2).
    """
    lo, hi = F32(lower), F32(upper)
    a, b = (F32(math.erf(float(bound / _SQRT2))) for bound in (lo, hi))
    return a, b, np.nextafter(lo, F32(np.inf)), np.nextafter(hi, F32(-np.inf))


def _truncated_normal_of_mantissa(mantissa: np.ndarray, lower: float, upper: float) -> np.ndarray:
    # truncated_normal's whole float pipeline, element by element.
    a, b, low, high = truncation_bounds(lower, upper)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        u = _scale_unit(_mantissa_to_unit_float(mantissa), a, b)
        return np.clip(_erf_inv(u) * _SQRT2, low, high)


_MIDDLE = 2**22  # the mantissa whose uniform value is 0


@functools.lru_cache(maxsize=2)
def _half_table(bound: float) -> np.ndarray:
    """`truncated_normal(-bound, bound)` at the mantissa `2**22 + k`, for `k = 0 .. 2**22` (16 MiB).

    With symmetric bounds, `uniform` maps the mantissas `2**22 + k` and
    `2**22 - k` to exact opposites (its multiply-add is `b * (2*unit - 1)`,
    and rounding is symmetric), and every later step is odd. So the lower
    half is the negative of this one, and entry `2**22` is minus the value
    at the mantissa 0.

    Building it takes one to two seconds, in every process that inits; with
    `$REMAT_INIT_TABLES` naming a directory (the suite sets it to its cache),
    the table is kept there (`tables`), under a name that changes with the
    source of the modules that compute it, with the SHA-256 of its contents,
    which later processes check when they read it (about 20 ms).
    """
    path = _table_file(bound)
    table = _read_table(path, _MIDDLE + 1) if path is not None else None
    if table is None:
        table = _build_half_table(bound)
        if path is not None:
            _write_table(path, table)
    return table


def _build_half_table(bound: float) -> np.ndarray:
    table = np.empty(_MIDDLE + 1, F32)
    step = 2**16  # small blocks keep the temporaries in cache
    for start in range(0, _MIDDLE, step):
        mantissa = np.arange(_MIDDLE + start, _MIDDLE + start + step)
        table[start : start + step] = _truncated_normal_of_mantissa(mantissa, -bound, bound)
    table[_MIDDLE] = -_truncated_normal_of_mantissa(np.zeros(1, np.uint32), -bound, bound)[0]
    table.flags.writeable = False
    return table


def _truncated_normal_of_bits(bits: np.ndarray, lower: float, upper: float) -> np.ndarray:
    mantissa = bits.ravel() >> np.uint32(9)
    if lower != -upper:
        return _truncated_normal_of_mantissa(mantissa, lower, upper)
    offset = mantissa.astype(np.intp)
    offset -= _MIDDLE
    negative = offset < 0
    np.abs(offset, out=offset)
    out = np.take(_half_table(upper), offset)
    return np.negative(out, out=out, where=negative)


def truncated_normal(key: Any, lower: float, upper: float, shape: tuple[int, ...]) -> np.ndarray:
    """`jax.random.truncated_normal(key, lower, upper, shape)` in float32 on XLA:CPU.

    `sqrt2 * erf_inv(u)` for `u` uniform in `[erf(lower/sqrt2), erf(upper/sqrt2))`,
    clamped into the open interval `(lower, upper)` with `nextafter`.
    """
    bits = random_bits(key, shape)
    return _truncated_normal_of_bits(bits, float(lower), float(upper)).reshape(shape)


# The standard deviation of a standard normal truncated to (-2, 2).
_TRUNCATED_STD = F32(0.87962566103423978)


def lecun_stddev(fan_in: float) -> np.float32:
    """`sqrt(1/fan_in) / .87962566103423978` in float32, as `lecun_normal` scales."""
    variance = F32(1.0 / fan_in)  # jax divides Python floats, then casts
    return np.sqrt(variance) / _TRUNCATED_STD


def lecun_normal(key: Any, shape: tuple[int, ...]) -> np.ndarray:
    """`jax.nn.initializers.lecun_normal()(key, shape)` for a float32 kernel, `(in, out)` last."""
    shape = tuple(shape)
    fan_in = math.prod(shape[:-1])  # in_axis=-2; leading axes are the receptive field
    return truncated_normal(key, -2.0, 2.0, shape) * lecun_stddev(float(fan_in))
