"""TensorFlow's process-wide settings, read where it is imported already (`manifest.state`)."""

from __future__ import annotations

import sys
from typing import Any


def settings() -> dict[str, Any]:
    tf = sys.modules["tensorflow"]
    return {
        "tensor_float_32": bool(tf.config.experimental.tensor_float_32_execution_enabled()),
        "run functions eagerly": bool(tf.config.functions_run_eagerly()),
    }
