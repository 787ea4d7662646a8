"""The JAX `Stack`: arrays, the precision pin, Flax's init in `jax.random`, the instrument.

Imports jax (and numpy).
"""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...contract import BackwardRecord, Params
from ..base import Stack
from . import evidence
from .flax_init import init_params


class JaxStack(Stack):
    """JAX: arrays through `np.asarray`/`jnp.asarray`, `jax_default_matmul_precision`."""

    name = "jax"

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def from_numpy(self, array: np.ndarray) -> jax.Array:
        return jnp.asarray(array)

    def pin_matmul_precision(self) -> None:
        jax.config.update("jax_default_matmul_precision", "highest")

    def matmul_precision(self) -> dict[str, str]:
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

    def canonical_params(self, seed: Any, dim: int, features: Any) -> Params:
        """Flax's init, reproduced in `jax.random` (`flax_init.init_params`)."""
        return init_params(seed, dim, features)

    def record(self, fn, args, origins, cotangent) -> BackwardRecord:
        """JAX's instrument: `evidence.backward_record` (the residuals of `jax.vjp`'s jaxpr)."""
        return evidence.backward_record(fn, args, origins=origins, cotangent=cotangent)


def _lowered_precision(setting: str | None) -> str:
    """The operand precision a float32 matmul lowers to under a `jax_default_matmul_precision`."""
    a = np.ones((2, 2), np.float32)
    with jax.default_matmul_precision(setting):
        text = jax.jit(jnp.matmul).lower(a, a).as_text()
    found = re.search(r"precision = \[(\w+)", text)
    return found.group(1) if found else "DEFAULT"  # no attribute: the default


STACK = JaxStack()
