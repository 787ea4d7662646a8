"""Where a run ran: the machine, read in the suite's parent process (`describe()`).

Platform, OS, CPU model, cores, memory, Python, and the variables that change
float32 matmuls. Imports no framework: the parent process must stay free of
them. Each port's device is read in its own worker (`conformance.running.devices`).

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
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from implementations import manifests

#: Variables that change how frameworks compute float32 matmuls or pick devices; each stack's
#: manifest adds the ones its framework reads (its `environment` and `reads`).
PRECISION_VARIABLES = ("NVIDIA_TF32_OVERRIDE", "CUDA_VISIBLE_DEVICES")


def precision_variables() -> tuple[str, ...]:
    """`PRECISION_VARIABLES` and every stack's own (its manifest's `environment` and `reads`)."""
    own = [v for m in manifests.manifests() for v in (*m.environment, *m.reads)]
    return tuple(dict.fromkeys((*PRECISION_VARIABLES, *own)))


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
        "variables": {
            name: os.environ[name] for name in precision_variables() if name in os.environ
        },
    }


def quietly(read: Callable[[], Any], default: Any = None) -> Any:
    """`read()`, or `default` if it raises."""
    # A machine fact is worth a report, never a failed run.
    try:
        return read()
    except Exception:
        return default


def os_name() -> str:
    """The operating system by its usual name: "Ubuntu 24.04.1 LTS", "macOS 14.5", ..."""
    system = platform.system()
    if system == "Darwin":
        release = quietly(lambda: platform.mac_ver()[0])
        return f"macOS {release}" if release else "macOS"
    if system == "Windows":
        return f"Windows {platform.release()} ({platform.version()})"
    if system == "Linux":
        release = quietly(platform.freedesktop_os_release, {}) or {}
        if release.get("PRETTY_NAME"):
            return release["PRETTY_NAME"]
    return f"{system} {platform.release()}".strip() or UNKNOWN


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name, from the place each OS keeps it (`cpuinfo`: text for tests)."""
    system = platform.system()
    if cpuinfo is not None or system == "Linux":
        text = cpuinfo if cpuinfo is not None else quietly(_read_cpuinfo, "")
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

    return quietly(read, "")


def _sysctl(name: str) -> str:
    def read() -> str:
        done = subprocess.run(
            ["sysctl", "-n", name], capture_output=True, text=True, timeout=5, check=True
        )
        return done.stdout.strip()

    return quietly(read, "")


def memory_bytes() -> int | None:
    """Physical memory in bytes (None when the OS will not say)."""
    system = platform.system()
    if system == "Linux":
        total = quietly(_meminfo_total)
        if total:
            return total
    if system == "Darwin":
        total = _sysctl("hw.memsize")
        if total.isdigit():
            return int(total)
    return quietly(lambda: os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _meminfo_total() -> int | None:
    with open("/proc/meminfo", encoding="utf-8") as file:
        for line in file:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024  # the kernel counts kB
    return None


def _usable_cores() -> int | None:
    # A container or `taskset` may allow fewer cores than the machine has.
    getter = getattr(os, "sched_getaffinity", None)
    return quietly(lambda: len(getter(0))) if getter else os.cpu_count()


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"
