"""Where a loaded port computes: its device, the accelerators it sees, its precision.

`port_environment(port)` runs in the port's own worker, right after
`pin_matmul_precision()`. It reads only frameworks that process has already
imported (`sys.modules`) and never imports one, so a port shows its own stack
and the worker stays isolated. Nothing here raises: a probe that fails says so
in its entry's "error".
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from implementations import manifests
from implementations.device_report import CPU


def port_environment(port: Any) -> dict[str, Any]:
    """Where a loaded port computes: its device, every framework's devices, its precision.

    Call in the port's worker right after `port.pin_matmul_precision()`, before
    anything loads the canonical port there (which would import JAX too).
    Only frameworks already imported are read (`sys.modules`): none is imported
    here. Never raises; a probe that fails says so in its entry's "error".
    """
    frameworks = {
        engine: _probe(target)
        for engine, (module, target) in probes().items()
        if sys.modules.get(module) is not None
    }
    entry = manifests.port(getattr(port, "name", ""))
    engine = "" if entry is None else entry[0].engine_of(entry[1])
    primary = primary_framework(getattr(port, "framework", ""), list(frameworks), engine)
    found = dict(frameworks[primary]["device"]) if primary else dict(CPU)
    found["framework"] = primary or "numpy"
    return {"device": found, "frameworks": frameworks, "precision": port_precision(port)}


def probes() -> dict[str, tuple[str, str]]:
    """Each engine whose stack has a device probe: engine -> (the module that must be imported
    already, the probe's `"module:function"`), from the manifests."""
    return {m.engine: (m.device_module, m.devices) for m in manifests.manifests() if m.devices}


def primary_framework(framework: str, imported: list[str], engine: str = "") -> str:
    """Which imported engine a port computes with ("" when none is imported): its manifest's
    engine, else its own framework, else the engine its framework is built on, else the first."""
    for candidate in (engine, framework, _built_on().get(framework, "")):
        if candidate and candidate in imported:
            return candidate
    return imported[0] if imported else ""


def _built_on() -> dict[str, str]:
    """Frameworks (as ports name theirs) -> the engine they compute with."""
    return {name: m.engine for m in manifests.manifests() for name in m.built_on}


def _probe(target: str) -> dict[str, Any]:
    try:
        return manifests.resolve(target)()
    except Exception as error:
        message = f"{type(error).__name__}: {error}".strip()
        return {"device": dict(CPU), "devices": [], "error": message[:500]}


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
