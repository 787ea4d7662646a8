"""The registry of ports. Importing this package imports no ML framework.

Built-in ports are declared by the stacks' manifests
(`implementations/stacks/<framework>/manifest.py`, read by `manifests`) as
lazy `"module:attr"` strings. Ports
from other packages register through the entry-point group
`remat_conformance.implementations`, with a value of the same form, or
`"exec:<command line>"` for a port in any language (a program speaking
docs/PROTOCOL.md, run by `implementations.process.ProcessPort`). A port is
loaded (imported, or its program started) the first time it is asked for, and:

- **available** when its module imports and gives an `Implementation`;
- **unavailable** when its framework is not installed, or cannot load in
  this process (a Keras port where Keras runs on another backend); the suite
  skips it, with the reason;
- **broken** when it fails in any other way (the suite fails it).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, entry_points, requires

from . import _moved, collector, manifests
from .contract import Implementation, StackUnavailable, installed_versions
from .installing import install_command
from .process import ProcessPort, ProcessPortError, ProtocolViolation

__all__ = [
    "BUILTIN",
    "CANONICAL",
    "ENTRY_POINT_GROUP",
    "Implementation",
    "PortStatus",
    "PortUnavailable",
    "available",
    "install_command",
    "load",
    "name_clashes",
    "registered",
    "status",
]

_moved.install()  # the old flat module names, deprecated

CANONICAL = "flax_linen"
ENTRY_POINT_GROUP = "remat_conformance.implementations"
#: An entry point value `exec:<command line>` registers a process port (docs/PROTOCOL.md).
EXEC_PREFIX = "exec:"


def _builtin() -> dict[str, str]:
    """The built-in ports, name -> target, from the stacks' manifests."""
    return {name: entry.target for name, (_, entry) in manifests.ports().items()}


BUILTIN: dict[str, str] = _builtin()

#: Ports that start processes or devices of their own (ranks): checked by the `scale` profile,
#: or when named, never by default (see conformance.running.profiles).
SHARDED = frozenset(
    name for name, (_, entry) in manifests.ports().items() if entry.profile == manifests.SCALE
)


class PortUnavailable(RuntimeError):
    """A port that cannot be loaded. `missing` is True when only its stack is absent: not
    installed, or (`held`) installed but unable to load in this process
    (`contract.StackUnavailable`: Keras on another backend here)."""

    def __init__(self, name: str, reason: str, *, missing: bool, held: bool = False):
        super().__init__(f"port {name!r}: {reason}")
        self.name, self.reason, self.missing, self.held = name, reason, missing, held


@dataclass(frozen=True)
class PortStatus:
    """Whether a registered port loads: `state` is "available", "unavailable" or "broken".

    `elsewhere` marks an available port that loads in a process of its own
    only (its stack is held here by another port: Keras on another backend).
    """

    name: str
    target: str
    source: str
    state: str
    reason: str = ""
    elsewhere: bool = False


def registered() -> dict[str, tuple[str, str]]:
    """Every registered port: name -> (target, source). Built-ins win a name clash
    (`name_clashes` says each)."""
    found = {name: (target, "built-in") for name, target in BUILTIN.items()}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, (point.value, f"entry point of {_distribution(point)}"))
    return found


def name_clashes() -> list[str]:
    """A warning for each entry point that claims a built-in port's name (the built-in runs:
    a package cannot replace a port the suite ships, nor be replaced without a word)."""
    return [
        f"the entry point {point.name!r} of {_distribution(point)} ({point.value}) claims "
        f"the built-in port's name: ignored, the built-in {point.name} is the one checked"
        for point in entry_points(group=ENTRY_POINT_GROUP)
        if point.name in BUILTIN
    ]


def _distribution(point) -> str:
    return point.dist.name if point.dist is not None else "unknown distribution"


@functools.cache
def load(name: str) -> Implementation:
    """The port registered as `name`, imported now. Raises `PortUnavailable`."""
    ports = registered()
    if name not in ports:
        known = ", ".join(sorted(ports))
        raise PortUnavailable(name, f"no such port; registered ports: {known}", missing=False)
    target, _ = ports[name]
    if target.startswith(EXEC_PREFIX):
        return _load_process_port(name, target[len(EXEC_PREFIX) :])
    if target[:1] in "\"'" or target[-1:] in "\"'":
        raise PortUnavailable(
            name,
            f"its target {target} is quoted: in entry_points.txt write it bare "
            "(module:attr), as pip would",
            missing=False,
        )
    if name not in BUILTIN:  # its code runs from the first line of its import, even if it fails
        OUTSIDE_LOADED[name] = target.partition(":")[0].split(".")[0]
    # The collector off while the port's framework loads: a third less CPU for TensorFlow's
    # import (`collector`'s docstring has the figures).
    with collector.paused():
        return _import_and_build(name, target)


#: The Python ports from other packages this process has imported (or tried to), by name:
#: the top-level package of each. Code the suite does not ship has run here: the canonical
#: side of an example is then made in a process of its own (`conformance.running.clean`).
OUTSIDE_LOADED: dict[str, str] = {}


def outside_code(but: str = "") -> dict[str, str]:
    """`OUTSIDE_LOADED` without the port `but` (the canonical port, which may be outside)."""
    return {name: top for name, top in OUTSIDE_LOADED.items() if name != but}


def _import_and_build(name: str, target: str) -> Implementation:
    """`load`'s work on a Python target (`module:attr`): the port built and checked."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except StackUnavailable as error:
        # Installed, but not loadable here (Keras on another backend): the
        # port is fine and loads in a process of its own.
        raise PortUnavailable(name, str(error), missing=True, held=True) from None
    except ModuleNotFoundError as error:
        own = module_name.split(".")[0]
        if error.name and error.name.split(".")[0] != own:
            raise _missing_module(name, error) from None
        raise PortUnavailable(
            name, f"cannot import {module_name}: {error}", missing=False
        ) from error
    except Exception as error:
        raise PortUnavailable(
            name, f"import of {module_name} failed: {error!r}", missing=False
        ) from error
    try:
        obj = getattr(module, attr) if attr else module
        port = obj() if isinstance(obj, type) else obj
    except Exception as error:
        raise PortUnavailable(name, f"cannot build {target}: {error!r}", missing=False) from error
    if not isinstance(port, Implementation):
        raise PortUnavailable(
            name, f"{target} is a {type(port).__name__}, not an Implementation", missing=False
        )
    if port.name != name:
        raise PortUnavailable(
            name, f"{target} calls itself {port.name!r}, registered as {name!r}", missing=False
        )
    return port


def _missing_module(name: str, error: ModuleNotFoundError) -> PortUnavailable:
    """A module the port imports is missing. A built-in port's framework not installed is
    unavailable, with what installs it. Broken, with the import error as it is: a module
    that is installed but shadowed (a directory of that name earlier on `sys.path`: no pip
    advice, the shadow named), and a port from another package that lacks its own
    dependency (its package's install is incomplete: a run that names it fails)."""
    top = error.name.split(".")[0]
    # A submodule missing from a top-level package that imported: maybe not the installed one.
    shadow = _shadowing(top) if error.name != top else None
    if shadow is not None:
        reason = (
            f"needs {error.name!r}: {type(error).__name__}: {error}; {top} is installed, but "
            f"{shadow} shadows it (a module named {top} earlier on the path: PYTHONPATH or "
            "the working directory)"
        )
        return PortUnavailable(name, reason, missing=False)
    if name not in BUILTIN:
        reason = f"needs {error.name!r}: {type(error).__name__}: {error}"
        return PortUnavailable(name, reason, missing=False)
    return PortUnavailable(
        name, f"needs {error.name!r}, not installed{install_hint(name)}", missing=True
    )


def _shadowing(top: str) -> str | None:
    """Where the module `top` is found, when an installed distribution provides another one
    of that name there (None: not installed, or found where it is installed)."""
    import importlib.util
    from importlib.metadata import distribution, packages_distributions
    from pathlib import Path

    try:
        spec = importlib.util.find_spec(top)
        distributions = packages_distributions().get(top) or []
    except (ImportError, ValueError):
        return None
    if spec is None or not distributions:
        return None
    found = spec.origin if spec.origin not in (None, "namespace") else None
    found = found or next(iter(spec.submodule_search_locations or []), None)
    if found is None:
        return None
    for dist in distributions:
        try:
            installed = Path(distribution(dist).locate_file(top)).resolve()
        except PackageNotFoundError:
            continue
        if Path(found).resolve().is_relative_to(installed):
            return None  # the installed one: missing for another reason
    return found


def install_hint(name: str) -> str:
    """What installs a built-in port's framework, as a parenthesis (empty if unknown)."""
    entry = manifests.port(name)
    extra = None if entry is None else entry[1].extra
    return f" ({install_command(extra)})" if extra else ""


def _load_process_port(name: str, command: str) -> Implementation:
    """A port that is a program (`exec:<command>`), started and greeted now."""
    try:
        return ProcessPort.from_command(name, command)
    except ProcessPortError as error:
        missing = type(error).__name__ == "ProcessPortUnavailable"
        raise PortUnavailable(name, str(error), missing=missing) from None
    except (ProtocolViolation, ValueError, OSError) as error:
        raise PortUnavailable(name, f"cannot start {command!r}: {error}", missing=False) from None


def stack_versions(name: str) -> dict[str, str] | None:
    """The installed versions of what a built-in port's pip extra installs, read without
    importing the port (None for a port whose extra this package does not know)."""
    entry = manifests.port(name)
    if entry is None:
        return None
    extras = entry[1].extra
    try:
        requirements = requires("remat-conformance") or []
    except PackageNotFoundError:  # run from a source tree that was never installed
        return None
    names = set()
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        if any(f'extra == "{extra}"' in marker for extra in extras.split(",")):
            names.add(re.match(r"[A-Za-z0-9_.-]+", spec.strip()).group(0))
    return installed_versions(sorted(names))


def status(names: Iterable[str] | None = None) -> list[PortStatus]:
    """Every registered port (or the named ones) and whether it loads, in registration order."""
    wanted = None if names is None else set(names)
    result = []
    for name, (target, source) in registered().items():
        if wanted is not None and name not in wanted:
            continue
        try:
            load(name)
        except PortUnavailable as error:
            if error.held:
                reason = f"loads in a process of its own: {error.reason}"
                result.append(PortStatus(name, target, source, "available", reason, True))
                continue
            state = "unavailable" if error.missing else "broken"
            result.append(PortStatus(name, target, source, state, error.reason))
        else:
            result.append(PortStatus(name, target, source, "available"))
    return result


def available() -> dict[str, Implementation]:
    """The ports that load, by name."""
    return {s.name: load(s.name) for s in status() if s.state == "available" and not s.elsewhere}
