"""JAX's process-wide settings, read where jax is imported already (`manifest.state`)."""

from __future__ import annotations

import sys
from typing import Any

#: The settings that change what a JAX port computes.
SETTINGS = (
    "jax_enable_x64",
    "jax_default_matmul_precision",
    "jax_numpy_rank_promotion",
    "jax_numpy_dtype_promotion",
    "jax_disable_jit",
    "jax_default_device",
    "jax_platforms",
    "jax_threefry_partitionable",
    "jax_debug_nans",
)


def settings() -> dict[str, Any]:
    jax = sys.modules["jax"]
    return {name: str(getattr(jax.config, name, None)) for name in SETTINGS}
