"""Input validation, shared so that every port raises the same error for the same bad input.

`check_seed`, `check_features`, `check_dim`, `check_x` (or `check_x_spec`,
then `check_x_values`, for an x whose values come later), `check_exercise` (the
exercise's three arguments, in the order every port checks them) and `dtype_category`.
Numpy only.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .sizes import _ELEMENTS_LIMIT, MAX_ELEMENTS, MAX_FEATURES, SizeLimitError, check_sizes

# `jax.random.PRNGKey` converts its seed to a C long: 2**63 raises
# OverflowError. In the default x32 mode it then keeps the low 32 bits, so
# seeds s and s + 2**32 give the same key (pinned in tests/jax/test_seed_range.py).
SEED_MAX = 2**63 - 1


def check_seed(seed: Any) -> int:
    """`seed` as a Python int in `[0, SEED_MAX]`; raise naming `seed` otherwise."""
    value = _integer_scalar(seed, "seed")
    if value < 0:
        raise ValueError(f"seed must be non-negative, got {value}")
    if value > SEED_MAX:
        raise ValueError(
            f"seed must be at most 2**63 - 1 (jax.random.PRNGKey's limit), got {value}"
        )
    return value


def check_features(features: Any) -> int:
    """`features` as a Python int in `[1, MAX_FEATURES]`; raise naming `features` otherwise."""
    value = _integer_scalar(features, "features")
    if value < 1:
        raise ValueError(f"features must be a positive integer, got {value}")
    if value > MAX_FEATURES:
        raise SizeLimitError(
            f"features={value} is too large: the (F, F) kernel would hold {value**2:.3g} "
            f"elements, past {_ELEMENTS_LIMIT}; features must be at most {MAX_FEATURES}"
        )
    return value


def check_exercise(
    seed: Any, x: Any, features: Any, as_input: Callable[[Any], Any]
) -> tuple[int, Any, int]:
    """`(seed, x, features)` of `nn_checkpoint_forward` checked: `seed`, `features`, then x by
    the stack's `as_input` (which raises naming `x`), then x's width against `features`
    (`check_sizes`), so that every port names the same argument first for the same call."""
    seed, features = check_seed(seed), check_features(features)
    x = as_input(x)
    check_sizes(x.shape[0], features)
    return seed, x, features


def check_dim(dim: Any) -> int:
    """`init_params`'s input width `dim` as a Python int in `[1, MAX_ELEMENTS]`, named `dim`."""
    if isinstance(dim, (bool, np.bool_)):
        raise ValueError(f"dim must be a positive integer, not a bool ({dim!r})")
    try:
        dim = operator.index(dim)
    except TypeError:
        raise TypeError(f"dim must be an integer, got {type(dim).__name__}: {dim!r}") from None
    if dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim}")
    if dim > MAX_ELEMENTS:
        raise SizeLimitError(f"dim={dim} is too large: the limit is {_ELEMENTS_LIMIT}")
    return dim


def _integer_scalar(value: Any, name: str) -> int:
    """An integer-valued scalar (int, integral float, 0-d array of any framework) as an int."""
    if getattr(value, "shape", None) == ():
        # A 0-d numpy, jax or torch array: `.item()` gives the Python scalar
        # and fails on a tracer, whose value nobody can know yet.
        try:
            value = value.item()
        except Exception as error:
            raise TypeError(
                f"{name} must be a concrete scalar, not a traced value; "
                f"mark it static under jax.jit ({type(error).__name__})"
            ) from None
    elif hasattr(value, "shape"):
        raise TypeError(f"{name} must be a scalar, got an array of shape {tuple(value.shape)}")
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer, not a bool ({value!r})")
    if isinstance(value, numbers.Integral):
        return operator.index(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"{name} must be a finite integer, got {value}")
        if not value.is_integer():
            raise ValueError(f"{name} must be integer-valued, got {value!r}")
        return int(value)
    raise TypeError(f"{name} must be an integer scalar, got {type(value).__name__}: {value!r}")


# ml_dtypes' narrow floats and ints have numpy kind "V"; know them by name.
_NARROW_FLOAT_PREFIXES = ("bfloat16", "float8", "float6", "float4")
_NARROW_INT_PREFIXES = ("int2", "int4", "uint2", "uint4")


def dtype_category(dtype: Any) -> str:
    """`"float"`, `"int"`, `"bool"`, `"complex"` or `"other"`, for a numpy or framework dtype."""
    name = str(dtype).rsplit(".", 1)[-1]
    if name.startswith(_NARROW_FLOAT_PREFIXES):
        return "float"
    if name.startswith(_NARROW_INT_PREFIXES):
        return "int"
    if name in ("half", "float", "double"):  # torch spells some as C types
        return "float"
    if name in ("short", "int", "long", "uint8", "int8"):
        return "int"
    if name in ("cfloat", "cdouble", "chalf"):
        return "complex"
    try:
        kind = np.dtype(name).kind
    except TypeError:
        return "other"
    return {"f": "float", "i": "int", "u": "int", "b": "bool", "c": "complex"}.get(kind, "other")


def check_x_spec(shape: tuple[int, ...], dtype: Any) -> int:
    """Check x's shape and dtype (all that a traced x reveals); return D."""
    category = dtype_category(dtype)
    if category not in ("float", "int"):
        raise TypeError(f"x must have a real floating or integer dtype, got {dtype}")
    shape = tuple(shape)
    if len(shape) != 1:
        raise ValueError(f"x must be a vector of shape (D,), got shape {shape}")
    if shape[0] < 1:
        raise ValueError("x must not be empty (D >= 1), got shape (0,)")
    if shape[0] > MAX_ELEMENTS:
        raise SizeLimitError(f"x is too large: D={shape[0]} elements, past {_ELEMENTS_LIMIT}")
    return int(shape[0])


def check_x(x: Any) -> np.ndarray:
    """x as a fresh float32 `(D,)` numpy array; raise naming `x` for anything else.

    Accepts lists, tuples and anything `np.asarray` reads (numpy, jax, a torch
    tensor that needs no grad). The result is always a copy, so nothing done
    to it can reach the caller's data.
    """
    try:
        array = np.asarray(x)
    except (ValueError, TypeError) as error:
        raise TypeError(f"x must be a real array-like of shape (D,): {error}") from None
    check_x_spec(array.shape, array.dtype)
    return check_x_values(array)


def check_x_values(array: np.ndarray) -> np.ndarray:
    """A float32 copy of a checked numpy x, which must be finite after the cast."""
    with np.errstate(over="ignore"):  # overflow to inf is reported just below
        converted = np.array(array, dtype=np.float32, copy=True)
    if not np.isfinite(converted).all():
        bad = int(np.flatnonzero(~np.isfinite(converted))[0])
        raise ValueError(
            f"x must be finite in float32; x[{bad}] = {array[bad]!r} is not"
            " (NaN, inf, or beyond float32's range)"
        )
    return converted
