"""Tensors in and out of the contract for Paddle: x checked into a tensor, tensors back to numpy.

Imports paddle, numpy and the contract only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...contract import check_x, check_x_spec, check_x_values
from .loaded import paddle


def to_host_array(tensor: paddle.Tensor) -> np.ndarray:
    """A tensor's values as a detached numpy copy (bfloat16, which numpy lacks, as float32)."""
    tensor = tensor.detach()
    if tensor.dtype == paddle.bfloat16:
        tensor = tensor.astype("float32")
    return np.array(tensor.numpy(), copy=True)


def from_host_array(array: np.ndarray) -> paddle.Tensor:
    """A numpy array as a tensor copy on the CPU, dtype kept (`paddle.to_tensor` copies)."""
    return paddle.to_tensor(np.array(array, copy=True, order="C"), place=paddle.CPUPlace())


def as_input(x: Any) -> paddle.Tensor:
    """x as a checked float32 `(D,)` tensor; raise naming `x` for anything else.

    A tensor keeps its autograd graph: `astype` makes a new tensor when the
    dtype changes and returns x itself when it is float32 already, which is
    never written to. Anything else becomes a fresh tensor from the
    contract's numpy copy.
    """
    if isinstance(x, paddle.Tensor):
        check_x_spec(tuple(x.shape), str(x.dtype))
        check_x_values(to_host_array(x))
        return x.astype("float32")
    return paddle.to_tensor(check_x(x))


def leaf_input(x: Any) -> paddle.Tensor:
    """A float32 copy of x that requires grad (`stop_gradient=False`): never the caller's own."""
    leaf = paddle.to_tensor(to_host_array(as_input(x)))
    leaf.stop_gradient = False
    return leaf


def pin_matmul_precision() -> None:
    """Nothing to pin on the CPU: Paddle's CPU kernels compute float32 matmuls in float32.

    (On CUDA, TF32 is cuBLAS's, switched by `NVIDIA_TF32_OVERRIDE`; this port runs on the CPU.)
    """


def matmul_precision() -> dict[str, str]:
    """Paddle's float32 matmul setting as far as it reports one: the device, and that the
    CPU computes float32 matmuls in float32."""
    return {
        "default": "float32 (Paddle's CPU kernels)",
        "pinned": "float32 (nothing to pin on the CPU)",
        "device": paddle.device.get_device(),
    }
