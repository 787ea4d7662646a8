"""Tensors in and out of the contract for MindSpore: x checked into a tensor, tensors back to
numpy. Imports mindspore, numpy and the contract only."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...contract import check_x, check_x_spec, check_x_values
from .loaded import ms

#: MindSpore's dtypes that numpy has, as numpy's (`mindspore.dtype_to_nptype` is deprecated
#: since MindSpore 2.7 and logs a warning on every call).
_NUMPY_DTYPES = {
    getattr(ms, name): np.dtype(name)
    for name in (
        "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
}  # fmt: skip


def numpy_dtype(dtype: Any) -> np.dtype:
    """A MindSpore dtype as numpy's (MindSpore spells them `Float32`); `object` when numpy
    has none (bfloat16 maps to float32's size class through the contract's names)."""
    return _NUMPY_DTYPES.get(dtype, np.dtype(object))


def to_host_array(tensor: ms.Tensor) -> np.ndarray:
    """A tensor's values as a numpy copy (bfloat16, which numpy lacks, as float32)."""
    if tensor.dtype == ms.bfloat16:
        tensor = tensor.astype(ms.float32)
    return np.array(tensor.asnumpy(), copy=True)


def from_host_array(array: np.ndarray) -> ms.Tensor:
    """A numpy array as a tensor copy, dtype kept."""
    return ms.Tensor(np.array(array, copy=True, order="C"))


def as_input(x: Any) -> ms.Tensor:
    """x as a checked float32 `(D,)` tensor; raise naming `x` for anything else.

    A tensor is checked from its dtype (in numpy's names) and values; `astype`
    gives a tensor that is never written to. Anything else becomes a fresh
    tensor from the contract's numpy copy.
    """
    if isinstance(x, ms.Tensor):
        dtype = "bfloat16" if x.dtype == ms.bfloat16 else numpy_dtype(x.dtype)
        check_x_spec(tuple(x.shape), dtype)
        check_x_values(to_host_array(x))
        return x.astype(ms.float32)
    return ms.Tensor(check_x(x))


def pin_matmul_precision() -> None:
    """Nothing to pin on the CPU: MindSpore's CPU kernels compute float32 matmuls in float32."""


def matmul_precision() -> dict[str, str]:
    """MindSpore's float32 matmul setting as far as it reports one: the device target."""
    return {
        "default": "float32 (MindSpore's CPU kernels)",
        "pinned": "float32 (nothing to pin on the CPU)",
        "device": str(ms.get_context("device_target")),
    }
