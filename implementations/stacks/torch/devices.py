"""torch's devices, as the suite's reports show them (`implementations.device_report`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from implementations.device_report import CPU, counted


def probe() -> dict[str, Any]:
    """CUDA/ROCm and MPS devices, the default device and the TF32 switches (torch imported)."""
    torch = sys.modules["torch"]
    found = [dict(CPU)]
    if torch.cuda.is_available():
        api = "rocm" if getattr(torch.version, "hip", None) else "cuda"
        for index in range(torch.cuda.device_count()):
            found.append({"kind": "gpu", "name": torch.cuda.get_device_name(index), "api": api})
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append({"kind": "gpu", "name": "Apple MPS", "api": "mps"})
    getter = getattr(torch, "get_default_device", None)  # torch >= 2.3
    default = str(getter()) if getter else "cpu"
    chosen = next((d for d in found if _torch_type(d) == default.split(":")[0]), dict(CPU))
    return {
        "device": chosen,
        "devices": counted(found),
        "default_device": default,
        "matmul_precision": torch.get_float32_matmul_precision(),
        "allow_tf32": {
            "cuda.matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn": bool(torch.backends.cudnn.allow_tf32),
        },
    }


def _torch_type(found: Mapping[str, str]) -> str:
    return {"cuda": "cuda", "rocm": "cuda", "mps": "mps"}.get(found.get("api", ""), "cpu")
