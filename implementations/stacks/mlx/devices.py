"""MLX's device, as the suite's reports show it (`implementations.device_report`)."""

from __future__ import annotations

import platform
import sys
from typing import Any

from implementations.device_report import quietly


def probe() -> dict[str, Any]:
    """MLX's default device, and its name where it is a GPU (MLX imported already)."""
    mx = sys.modules["mlx.core"]
    default = mx.default_device()
    kind = str(default.type).rsplit(".", 1)[-1].lower()  # DeviceType.gpu -> "gpu"
    name = "cpu"
    if kind != "cpu":
        # mx.device_info() is newer MLX's spelling of mx.metal.device_info().
        info = quietly(mx.device_info) or quietly(mx.metal.device_info) or {}
        name = str(info.get("device_name") or info.get("architecture") or kind)
    api = "metal" if kind == "gpu" and platform.system() == "Darwin" else ""
    found = {"kind": kind, "name": name, **({"api": api} if api else {})}
    return {"device": found, "devices": [dict(found, count=1)], "default_device": str(default)}
