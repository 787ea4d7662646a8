"""The JAX `Stack`: arrays, the precision pin, Flax's init in `jax.random`, the instrument.

Imports jax (and numpy).
"""

from __future__ import annotations

import re
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import Stack
from . import instrument
from .flax_init import init_params


def to_host_array(array: Any) -> np.ndarray:
    return np.asarray(array)


def from_host_array(array: np.ndarray) -> jax.Array:
    return jnp.asarray(array)


def pin_matmul_precision() -> None:
    jax.config.update("jax_default_matmul_precision", "highest")


def matmul_precision() -> dict[str, str]:
    """The precision XLA is asked for a float32 matmul: JAX's default, the pin, and now.

    Read from the lowered program of a float32 matmul (`precision = [...]`).
    On the CPU every setting computes in float32, so default and pinned
    differ in name only; on a TPU (bf16 passes) or GPU (TF32) they do not.
    """
    backend = jax.default_backend()
    return {
        "default": _lowered_precision(None),
        "pinned": _lowered_precision("highest"),
        "current": _lowered_precision(jax.config.jax_default_matmul_precision),
        "backend": backend,
        "device": backend,
    }


def _lowered_precision(setting: str | None) -> str:
    """The operand precision a float32 matmul lowers to under a `jax_default_matmul_precision`."""
    a = np.ones((2, 2), np.float32)
    with jax.default_matmul_precision(setting):
        text = jax.jit(jnp.matmul).lower(a, a).as_text()
    found = re.search(r"precision = \[(\w+)", text)
    return found.group(1) if found else "DEFAULT"  # no attribute: the default


_HERE = sys.modules[__name__]

#: JAX: `np.asarray`/`jnp.asarray`, `jax_default_matmul_precision`, Flax's init in
#: `jax.random`, and the residuals of `jax.vjp`'s jaxpr
#: (`record(fn, args, origins, cotangent)`, `instrument.backward_record`).
STACK = Stack(
    "jax",
    arrays=_HERE,
    precision=_HERE,
    init=init_params,
    instrument=instrument.backward_record,
    distributions=("jax", "jaxlib"),
)
