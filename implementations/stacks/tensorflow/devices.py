"""TensorFlow's devices, as the suite's reports show them (`implementations.device_report`)."""

from __future__ import annotations

import sys
from typing import Any

from implementations.device_report import CPU, counted, device, quietly


def probe() -> dict[str, Any]:
    """Its physical devices and TF32 setting (TensorFlow imported already)."""
    tf = sys.modules["tensorflow"]
    found = []
    for physical in tf.config.list_physical_devices():
        kind = physical.device_type.lower()
        name = kind
        if kind != "cpu":
            details = quietly(lambda p=physical: tf.config.experimental.get_device_details(p), {})
            name = (details or {}).get("device_name") or physical.name
        found.append(device(kind, name))
    # TensorFlow places an op on an accelerator when it has one.
    chosen = next((d for d in found if d["kind"] != "cpu"), found[0] if found else dict(CPU))
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    return {
        "device": chosen,
        "devices": counted(found),
        "matmul_precision": "tensor_float_32 allowed" if tf32 else "float32",
    }
