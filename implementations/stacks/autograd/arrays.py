"""Arrays in and out of the contract for autograd: numpy arrays, and x traced or not.

autograd computes on numpy arrays; under `grad` or `make_vjp` a traced value is a
box (`ArrayBox`) around one. Imports autograd, numpy and the contract only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from autograd.tracer import getval, isbox

from ...contract import check_x, check_x_spec, check_x_values


def to_host_array(array: Any) -> np.ndarray:
    """A numpy copy of an array, unboxed if traced (detached: no graph comes along)."""
    return np.array(getval(array), copy=True)


def from_host_array(array: np.ndarray) -> np.ndarray:
    """autograd's own array for a numpy one: a numpy copy, dtype kept."""
    return np.array(array, copy=True)


def as_input(x: Any) -> Any:
    """x as a checked float32 `(D,)` array; raise naming `x` for anything else.

    A box (x traced by the caller's `grad`) is checked on the value inside and
    handed on as the box itself, so gradients flow back to the caller's x
    (cast to float32 by `astype` where it is not float32 already). Anything else
    becomes a fresh float32 numpy copy (`check_x`): nothing done to it reaches
    the caller's data.
    """
    if isbox(x):
        value = np.asarray(getval(x))
        check_x_spec(value.shape, value.dtype)
        check_x_values(value)
        return x if value.dtype == np.float32 else x.astype(np.float32)
    return check_x(x)


def _blas() -> str:
    """The BLAS numpy was built against, as numpy reports it."""
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older numpy: no dicts mode
        return "not reported"


def pin_matmul_precision() -> None:
    """Nothing to pin: numpy's float32 `dot` is float32 BLAS (sgemm/sgemv), with no
    reduced-precision mode and no switch."""


def matmul_precision() -> dict[str, str]:
    """numpy's float32 matmul precision: float32 always, on the CPU."""
    return {
        "default": "float32 (numpy's dot calls float32 BLAS; there is no reduced-precision mode)",
        "pinned": "float32 (nothing to pin)",
        "device": "cpu",
        "blas": _blas(),
    }
