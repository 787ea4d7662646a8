"""torch's process-wide settings, read where torch is imported already (`manifest.state`)."""

from __future__ import annotations

import sys
from typing import Any


def settings() -> dict[str, Any]:
    torch = sys.modules["torch"]
    getter = getattr(torch, "get_default_device", None)  # torch >= 2.3
    return {
        "default dtype": str(torch.get_default_dtype()),
        "default device": str(getter()) if getter else "cpu",
        "float32 matmul precision": torch.get_float32_matmul_precision(),
        "grad enabled": torch.is_grad_enabled(),
        "deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
        "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "anomaly detection": torch.is_anomaly_enabled(),
    }
