"""How a stack's device probe describes devices. Imports nothing.

A stack's probe (its manifest's `devices`) runs in a port's worker, where its
framework is imported already, and returns `{"device": ..., "devices": [...],
...}`: the device the framework computes on by default, every device it sees
(identical ones once, counted), and what it says of its float32 matmuls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CPU = {"kind": "cpu", "name": "cpu"}


def device(kind: str, name: str) -> dict[str, str]:
    """A device as {"kind": "cpu" | "gpu" | "tpu" | ..., "name": ..., "api": ...}."""
    kind = str(kind).lower()
    api = {"cuda": "cuda", "rocm": "rocm", "metal": "metal"}.get(kind, "")
    kind = "gpu" if api else kind
    found = {"kind": kind, "name": "cpu" if kind == "cpu" else str(name)}
    return {**found, "api": api} if api else found


def counted(devices: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Identical devices once each, with how many there are."""
    found: list[dict[str, Any]] = []
    for each in devices:
        for seen in found:
            if {k: v for k, v in seen.items() if k != "count"} == each:
                seen["count"] += 1
                break
        else:
            found.append({**each, "count": 1})
    return found


def quietly(read: Callable[[], Any], default: Any = None) -> Any:
    """`read()`, or `default` if it raises: a device fact is worth a report, never an error."""
    try:
        return read()
    except Exception:
        return default
