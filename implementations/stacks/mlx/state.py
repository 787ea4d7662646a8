"""MLX's process-wide settings, read where mlx is imported already (`manifest.state`)."""

from __future__ import annotations

import sys
from typing import Any


def settings() -> dict[str, Any]:
    mx = sys.modules["mlx.core"]
    return {"default device": str(mx.default_device())}
