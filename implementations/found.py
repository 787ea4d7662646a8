"""Whether a port's framework is installed, read without importing it (`list` uses this).

Importing every framework to list the ports took 22 s on a busy machine.
This module answers from the import system's finders
(`importlib.util.find_spec` on top-level modules, which reads the file
system and imports nothing) and from the installed distributions' metadata
(versions). What it cannot see is a framework that is installed but fails
when imported (a broken wheel, a missing shared library, Keras on another
backend): that shows only when the port is loaded (`implementations.status`,
or `python -m conformance list --import`). So its answer is never
"available": a port whose modules are all found is **found**, and the
caller says that it was not imported.
"""

from __future__ import annotations

import importlib.util
import shlex
import shutil
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

from . import manifests


def modules(name: str) -> tuple[str, ...] | None:
    """The top-level modules a built-in port imports (its framework), from its manifest entry;
    None for a port from elsewhere or a process port."""
    entry = manifests.port(name)
    if entry is None or not entry[1].modules:
        return None
    return entry[1].modules


def distributions(module: str) -> tuple[str, ...]:
    """The distributions whose installed version stands for a top-level module."""
    for manifest in manifests.manifests():
        if module in manifest.distributions:
            return tuple(manifest.distributions[module])
    return (module,)


@dataclass(frozen=True)
class Found:
    """A port's framework as the file system shows it (nothing imported).

    `state`: "found" (every module it needs is installed), "unavailable" (one
    is not: `reason` names it), "unknown" (a port from an entry point: its
    framework is known only once its module is imported) or "broken" (its
    registration cannot load, whatever is installed: a quoted target).
    """

    name: str
    state: str
    reason: str = ""
    versions: dict[str, str] = field(default_factory=dict)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken finder or a module with no spec
        return False


def _version(module: str) -> str:
    for distribution in distributions(module):
        try:
            return version(distribution)
        except PackageNotFoundError:
            continue
    return "version unknown"


def find(name: str, target: str) -> Found:
    """Port `name` (registered as `target`, "module:attr"), without importing its framework."""
    if target[:1] in "\"'" or target[-1:] in "\"'":  # as `implementations.load` refuses it
        return Found(
            name,
            "broken",
            f"its target {target} is quoted: in entry_points.txt write it bare "
            "(module:attr), as pip would",
        )
    if target.startswith("exec:"):  # a process port: its program, looked up on PATH
        words = shlex.split(target[len("exec:") :])
        program = words[0] if words else ""
        if not program or shutil.which(program) is None:
            return Found(name, "unavailable", f"needs {program!r}, not found on PATH")
        return Found(name, "found", versions={program: "version known once it starts"})
    needed = modules(name)
    if needed is None or not target.startswith("implementations."):
        top = target.partition(":")[0].split(".")[0]
        if not _installed(top):
            return Found(name, "unavailable", f"needs {top!r}, not installed")
        return Found(name, "unknown", "its framework is known once its module is imported")
    missing = [m for m in needed if not _installed(m)]
    if missing:
        return Found(name, "unavailable", f"needs {missing[0]!r}, not installed")
    return Found(name, "found", versions={m: _version(m) for m in needed})
