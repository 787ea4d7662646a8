"""Arrays in and out of the contract for MLX: x checked into an `mx.array`, arrays back to
numpy, and MLX's float32 matmul precision. Imports mlx, numpy and the contract only."""

from __future__ import annotations

import os
from typing import Any

import mlx.core as mx
import numpy as np

from ...contract import check_x, check_x_spec, check_x_values

# MLX reads this variable once, at its first matmul (a C++ static), and lets
# float32 matmuls run at reduced precision (TF32 on CUDA, Metal's neural
# accelerators) unless it is "0". There is no setter: the environment is the switch.
TF32_ENV = "MLX_ENABLE_TF32"
TF32_DEFAULT = "1"  # mlx/utils.h: get_var("MLX_ENABLE_TF32", 1)


def to_host_array(array: mx.array) -> np.ndarray:
    """An MLX array's values as a numpy copy (evaluating it); bfloat16, which numpy lacks,
    as float32."""
    if array.dtype == mx.bfloat16:
        array = array.astype(mx.float32)
    return np.array(array, copy=True)


def from_host_array(array: np.ndarray) -> mx.array:
    """A numpy array as an `mx.array` copy, dtype kept where MLX has it.

    `mx.array(a)` alone turns float64 into float32 (and 1e39 into inf), so
    the dtype is passed explicitly.
    """
    array = np.asarray(array)
    name = "bool_" if array.dtype == np.bool_ else array.dtype.name
    dtype = getattr(mx, name, None)
    return mx.array(array, dtype=dtype) if isinstance(dtype, mx.Dtype) else mx.array(array)


def as_input(x: Any) -> mx.array:
    """x as a checked float32 `(D,)` `mx.array`; raise naming `x` for anything else.

    An `mx.array` is checked in full where MLX can evaluate it. Under
    `mx.compile` or `mx.vmap` it cannot (MLX refuses to evaluate inside those
    transformations), so only its shape and dtype are checked, as for a JAX
    tracer. Anything else becomes a fresh array from the contract's numpy copy.
    """
    if isinstance(x, mx.array):
        check_x_spec(tuple(x.shape), x.dtype)
        try:
            host = to_host_array(x)
        except ValueError as error:
            if "[eval]" not in str(error):
                raise
            return x.astype(mx.float32)  # traced: values unknown yet
        check_x_values(host)
        return x.astype(mx.float32)  # a new array: x itself is never touched
    return mx.array(check_x(x))


def pin_matmul_precision() -> None:
    """Keep float32 matmuls in float32 on accelerators: `MLX_ENABLE_TF32=0`.

    Effective only before MLX's first matmul in the process, when MLX reads
    the variable; the CPU backend computes float32 matmuls in float32 anyway.
    """
    os.environ[TF32_ENV] = "0"


def matmul_precision() -> dict[str, str]:
    """MLX's float32 matmul precision setting: its default, the pin, and this process's."""
    return {
        "default": f"{TF32_ENV}={TF32_DEFAULT} (reduced-precision float32 matmuls allowed on "
        "CUDA and on Metal GPUs with neural accelerators)",
        "pinned": f"{TF32_ENV}=0",
        "current": f"{TF32_ENV}={os.environ.get(TF32_ENV, TF32_DEFAULT)}",
        "device": str(mx.default_device()),
        "note": "MLX reads the variable once, at its first matmul; on the CPU float32 "
        "matmuls are float32 whatever it says",
    }
