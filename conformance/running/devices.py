"""Where a loaded port computes: its device, the accelerators it sees, its precision.

`port_environment(port)` runs in the port's own worker, right after
`pin_matmul_precision()`. It reads only frameworks that process has already
imported (`sys.modules`) and never imports one, so a port shows its own stack
and the worker stays isolated. Nothing here raises: a probe that fails says so
in its entry's "error".
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable, Mapping
from typing import Any

from .machine import quietly


def port_environment(port: Any) -> dict[str, Any]:
    """Where a loaded port computes: its device, every framework's devices, its precision.

    Call in the port's worker right after `port.pin_matmul_precision()`, before
    anything loads the canonical port there (which would import JAX too).
    Only frameworks already imported are read (`sys.modules`): none is imported
    here. Never raises; a probe that fails says so in its entry's "error".
    """
    frameworks = {
        name: _probe(name)
        for name, module in FRAMEWORK_MODULES.items()
        if sys.modules.get(module) is not None
    }
    primary = primary_framework(getattr(port, "framework", ""), list(frameworks))
    device = dict(frameworks[primary]["device"]) if primary else dict(CPU)
    device["framework"] = primary or "numpy"
    return {"device": device, "frameworks": frameworks, "precision": port_precision(port)}


#: The frameworks whose devices can be read, by the module that must be imported already.
FRAMEWORK_MODULES = {"jax": "jax", "torch": "torch", "tensorflow": "tensorflow", "mlx": "mlx.core"}
#: Ports whose framework is a library on top of another.
_BUILT_ON = {"flax": "jax", "equinox": "jax", "dm-haiku": "jax", "haiku": "jax", "keras": None}
CPU = {"kind": "cpu", "name": "cpu"}


def primary_framework(framework: str, imported: list[str]) -> str:
    """Which imported framework a port computes with ("" when none is imported)."""
    if framework in imported:
        return framework
    if framework == "keras":
        backend = quietly(lambda: sys.modules["keras"].backend.backend(), "")
        if backend in imported:
            return backend
    base = _BUILT_ON.get(framework)
    if base in imported:
        return base
    return imported[0] if imported else ""


def _probe(name: str) -> dict[str, Any]:
    try:
        return _PROBES[name]()
    except Exception as error:
        message = f"{type(error).__name__}: {error}".strip()
        return {"device": dict(CPU), "devices": [], "error": message[:500]}


def _jax() -> dict[str, Any]:
    jax = sys.modules["jax"]
    devices = jax.devices()  # the default backend's
    found = [_device(d.platform, d.device_kind) for d in devices]
    precision = getattr(jax.config, "jax_default_matmul_precision", None)
    return {
        "device": found[0] if found else dict(CPU),
        "devices": _counted(found),
        "backend": jax.default_backend(),
        "matmul_precision": str(precision),
    }


def _torch() -> dict[str, Any]:
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
    device = next((d for d in found if _torch_type(d) == default.split(":")[0]), dict(CPU))
    return {
        "device": device,
        "devices": _counted(found),
        "default_device": default,
        "matmul_precision": torch.get_float32_matmul_precision(),
        "allow_tf32": {
            "cuda.matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn": bool(torch.backends.cudnn.allow_tf32),
        },
    }


def _torch_type(device: Mapping[str, str]) -> str:
    return {"cuda": "cuda", "rocm": "cuda", "mps": "mps"}.get(device.get("api", ""), "cpu")


def _tensorflow() -> dict[str, Any]:
    tf = sys.modules["tensorflow"]
    found = []
    for physical in tf.config.list_physical_devices():
        kind = physical.device_type.lower()
        name = kind
        if kind != "cpu":
            details = quietly(lambda p=physical: tf.config.experimental.get_device_details(p), {})
            name = (details or {}).get("device_name") or physical.name
        found.append(_device(kind, name))
    # TensorFlow places an op on an accelerator when it has one.
    device = next((d for d in found if d["kind"] != "cpu"), found[0] if found else dict(CPU))
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    return {
        "device": device,
        "devices": _counted(found),
        "matmul_precision": "tensor_float_32 allowed" if tf32 else "float32",
    }


def _mlx() -> dict[str, Any]:
    mx = sys.modules["mlx.core"]
    default = mx.default_device()
    kind = str(default.type).rsplit(".", 1)[-1].lower()  # DeviceType.gpu -> "gpu"
    name = "cpu"
    if kind != "cpu":
        # mx.device_info() is newer MLX's spelling of mx.metal.device_info().
        info = quietly(mx.device_info) or quietly(mx.metal.device_info) or {}
        name = str(info.get("device_name") or info.get("architecture") or kind)
    api = "metal" if kind == "gpu" and platform.system() == "Darwin" else ""
    device = {"kind": kind, "name": name, **({"api": api} if api else {})}
    return {"device": device, "devices": [dict(device, count=1)], "default_device": str(default)}


_PROBES: dict[str, Callable[[], dict[str, Any]]] = {
    "jax": _jax,
    "torch": _torch,
    "tensorflow": _tensorflow,
    "mlx": _mlx,
}


def _device(kind: str, name: str) -> dict[str, str]:
    """A device as {"kind": "cpu" | "gpu" | "tpu" | ..., "name": ..., "api": ...}."""
    kind = str(kind).lower()
    api = {"cuda": "cuda", "rocm": "rocm", "metal": "metal"}.get(kind, "")
    kind = "gpu" if api else kind
    device = {"kind": kind, "name": "cpu" if kind == "cpu" else str(name)}
    return {**device, "api": api} if api else device


def _counted(devices: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Identical devices once each, with how many there are."""
    counted: list[dict[str, Any]] = []
    for device in devices:
        for seen in counted:
            if {k: v for k, v in seen.items() if k != "count"} == device:
                seen["count"] += 1
                break
        else:
            counted.append({**device, "count": 1})
    return counted


def port_precision(port: Any) -> dict[str, Any]:
    """The port's own account of its matmul precision (`matmul_precision()`), if it gives one."""
    method = getattr(port, "matmul_precision", None)
    if not callable(method):
        return {}
    try:
        settings = method()
    except Exception as error:
        return {"error": f"matmul_precision() raised {type(error).__name__}: {error}"[:500]}
    if not isinstance(settings, Mapping):
        return {"error": f"matmul_precision() returned {type(settings).__name__}, not a dict"}
    return {str(key): _plain(value) for key, value in settings.items()}


def _plain(value: Any) -> Any:
    # Strings, numbers and nested dicts and lists of them; anything else as its text.
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return str(value)
