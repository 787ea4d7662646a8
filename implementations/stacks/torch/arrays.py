"""Tensors in and out of the contract: x checked into a tensor, tensors back to numpy.

Imports torch, numpy and the contract only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ...contract import check_x, check_x_spec, check_x_values


def to_host_array(tensor: torch.Tensor) -> np.ndarray:
    """A tensor's values as a detached numpy array (dtypes numpy lacks become float64)."""
    host = tensor.detach().cpu().resolve_conj().resolve_neg()
    try:
        return host.numpy()
    except TypeError:  # bfloat16, float8: no numpy dtype
        return host.to(torch.float64).numpy()


def from_host_array(array: np.ndarray, device: Any = None) -> torch.Tensor:
    """A fresh, writable, C-contiguous tensor copy of a numpy array (dtype kept).

    A copy: `torch.from_numpy` alone would share the array's memory (and
    warn about the canonical arrays, which are read-only).
    """
    tensor = torch.from_numpy(np.array(array, copy=True, order="C"))
    return tensor if device is None else tensor.to(device)


def as_input(x: Any) -> torch.Tensor:
    """x as a checked float32 `(D,)` tensor; raise naming `x` for anything else.

    A tensor keeps its device and its autograd graph: `.to(torch.float32)`
    returns x itself when it is float32 already, and a new tensor otherwise,
    never changing x. Anything else (numpy, lists) becomes a fresh CPU tensor.
    """
    if isinstance(x, torch.Tensor):
        check_x_spec(tuple(x.shape), x.dtype)
        check_x_values(to_host_array(x))
        return x.to(torch.float32)
    return torch.from_numpy(check_x(x))  # check_x returns a fresh float32 copy


def leaf_input(x: Any) -> torch.Tensor:
    """A float32 copy of x that requires grad: never the caller's own tensor."""
    return as_input(x).detach().clone().requires_grad_()


# torch's float32 matmul setting as found before the first pin: what torch
# would use if the suite did not pin it (its own default, or the user's).
_FOUND: list[str] = []


def _setting() -> str:
    """torch's float32 matmul setting in its own words: "highest" is float32; "high" lets
    CUDA use TF32 (or bf16x3), "medium" bfloat16."""
    precision = torch.get_float32_matmul_precision()
    tf32 = "TF32 allowed" if torch.backends.cuda.matmul.allow_tf32 else "TF32 off"
    return f"{precision} ({tf32} for CUDA matmuls)"


def pin_matmul_precision() -> None:
    """float32 matmuls in float32 on CUDA: no TF32 (torch's cuDNN default allows it)."""
    if not _FOUND:
        _FOUND.append(_setting())
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def matmul_precision() -> dict[str, str]:
    """torch's float32 matmul setting: as found before the pin, the pin, and now.

    `torch.get_float32_matmul_precision()` and `torch.backends.cuda.matmul.allow_tf32`,
    read from torch. On the CPU torch computes float32 matmuls in float32 whatever
    they say.
    """
    return {
        "default": _FOUND[0] if _FOUND else _setting(),
        "pinned": "highest (TF32 off for CUDA matmuls)",
        "current": _setting(),
        "device": "cuda" if torch.cuda.is_available() else "cpu",
    }
