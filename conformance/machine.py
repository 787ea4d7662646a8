"""Where a run ran: the machine (read in the parent) and each port's device (read in its worker).

- `describe()`: platform, OS, CPU model, cores, memory, Python, and the
  variables that change float32 matmuls. Imports no framework: the suite's
  parent process must stay free of them.
- `port_environment(port)`: the device the port's framework computes on, the
  accelerators it sees, and the port's matmul precision settings. Call it in
  the port's own worker, after `pin_matmul_precision()`: it reads only
  frameworks that process has already imported, and never imports one.

No hostname, hashed or not: CI runners are fresh machines with random names,
so a name would split identical runners in a merged matrix and tell the reader
nothing, and a hash of a short name is undone by guessing. Nothing here raises:
a field that cannot be read is None or "unknown".
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

#: Variables that change how frameworks compute float32 matmuls or pick devices.
PRECISION_VARIABLES = (
    "JAX_PLATFORMS",
    "JAX_DEFAULT_MATMUL_PRECISION",
    "JAX_ENABLE_X64",
    "NVIDIA_TF32_OVERRIDE",
    "MLX_ENABLE_TF32",
    "TF_ENABLE_ONEDNN_OPTS",
    "XLA_FLAGS",
    "KERAS_BACKEND",
    "CUDA_VISIBLE_DEVICES",
)
#: The suite's own packages, whose versions the parent records.
PACKAGES = ("remat-conformance", "numpy", "hypothesis")
UNKNOWN = "unknown"


# ---------------------------------------------------------------------------
# The machine (parent side)
# ---------------------------------------------------------------------------


@functools.cache
def describe() -> dict[str, Any]:
    """The machine this process runs on, as plain data (fields: docs/REPORT.md)."""
    return {
        "system": platform.system() or UNKNOWN,
        "os": os_name(),
        "release": platform.release() or UNKNOWN,
        "platform": platform.platform(),
        "architecture": platform.machine() or UNKNOWN,
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": _usable_cores(),
        "memory_bytes": memory_bytes(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "packages": {name: _version(name) for name in PACKAGES},
        "variables": {name: os.environ[name] for name in PRECISION_VARIABLES if name in os.environ},
    }


def _quietly(read: Callable[[], Any], default: Any = None) -> Any:
    # A machine fact is worth a report, never a failed run.
    try:
        return read()
    except Exception:
        return default


def os_name() -> str:
    """The operating system by its usual name: "Ubuntu 24.04.1 LTS", "macOS 14.5", ..."""
    system = platform.system()
    if system == "Darwin":
        release = _quietly(lambda: platform.mac_ver()[0])
        return f"macOS {release}" if release else "macOS"
    if system == "Windows":
        return f"Windows {platform.release()} ({platform.version()})"
    if system == "Linux":
        release = _quietly(platform.freedesktop_os_release, {}) or {}
        if release.get("PRETTY_NAME"):
            return release["PRETTY_NAME"]
    return f"{system} {platform.release()}".strip() or UNKNOWN


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name, from the place each OS keeps it (`cpuinfo`: text for tests)."""
    system = platform.system()
    if cpuinfo is not None or system == "Linux":
        text = cpuinfo if cpuinfo is not None else _quietly(_read_cpuinfo, "")
        model = _cpuinfo_model(text) or (_lscpu_model() if cpuinfo is None else "")
        if model:
            return model
    elif system == "Darwin":
        model = _sysctl("machdep.cpu.brand_string")
        if model:
            return model
    return platform.processor() or platform.machine() or UNKNOWN


def _read_cpuinfo() -> str:
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
        return file.read()


# x86 says "model name"; ARM boards "Model" or "Hardware"; POWER "cpu"; others "cpu
# model" or "uarch". First match wins, in this order. ARM servers give none of
# these (only part numbers), which lscpu turns into a name.
_CPUINFO_KEYS = ("model name", "cpu model", "model", "hardware", "cpu", "uarch", "processor")


def _cpuinfo_model(text: str) -> str:
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if sep and value and key not in found:
            found[key] = value
    for key in _CPUINFO_KEYS:
        value = found.get(key, "")
        if value and not value.isdigit():  # x86's "processor: 0" is an index, not a name
            return " ".join(value.split())
    return ""


def _lscpu_model() -> str:
    def read() -> str:
        done = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5, check=True)
        return _cpuinfo_model(done.stdout)

    return _quietly(read, "")


def _sysctl(name: str) -> str:
    def read() -> str:
        done = subprocess.run(
            ["sysctl", "-n", name], capture_output=True, text=True, timeout=5, check=True
        )
        return done.stdout.strip()

    return _quietly(read, "")


def memory_bytes() -> int | None:
    """Physical memory in bytes (None when the OS will not say)."""
    system = platform.system()
    if system == "Linux":
        total = _quietly(_meminfo_total)
        if total:
            return total
    if system == "Darwin":
        total = _sysctl("hw.memsize")
        if total.isdigit():
            return int(total)
    return _quietly(lambda: os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _meminfo_total() -> int | None:
    with open("/proc/meminfo", encoding="utf-8") as file:
        for line in file:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024  # the kernel counts kB
    return None


def _usable_cores() -> int | None:
    # A container or `taskset` may allow fewer cores than the machine has.
    getter = getattr(os, "sched_getaffinity", None)
    return _quietly(lambda: len(getter(0))) if getter else os.cpu_count()


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


# ---------------------------------------------------------------------------
# A port's device and precision (worker side)
# ---------------------------------------------------------------------------


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
        backend = _quietly(lambda: sys.modules["keras"].backend.backend(), "")
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
            details = _quietly(lambda p=physical: tf.config.experimental.get_device_details(p), {})
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
        info = _quietly(mx.device_info) or _quietly(mx.metal.device_info) or {}
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
