"""JAX's devices, as the suite's reports show them (`implementations.device_report`)."""

from __future__ import annotations

import sys
from typing import Any

from implementations.device_report import CPU, counted, device


def probe() -> dict[str, Any]:
    """The default backend's devices and JAX's float32 matmul setting (JAX imported already)."""
    jax = sys.modules["jax"]
    found = [device(d.platform, d.device_kind) for d in jax.devices()]
    precision = getattr(jax.config, "jax_default_matmul_precision", None)
    return {
        "device": found[0] if found else dict(CPU),
        "devices": counted(found),
        "backend": jax.default_backend(),
        "matmul_precision": str(precision),
    }
