"""The process-wide state a port could change for the ports after it in the same worker.

Ports of one framework share a worker process (`worker`). A port that flips
a framework setting (JAX's x64, the default matmul precision, torch's default
dtype), sets an environment variable, or swaps a function of a framework's
module (a monkeypatch) would change the verdict of the ports that run after
it. So the worker reads this state before and after each port's work
(`capture`), and `changes` says what differs: the worker reports it, and the
parent runs the next port in a fresh worker. What a port's first import adds
(new modules, new variables, new settings) is not a change: only what was
there before and is different after.

What is read: the environment; numpy's floating-point error handling; each
stack's framework settings (its manifest's `state`, read only where the
framework is imported already); and the identity of every public attribute of
the frameworks' modules (the top-level modules of every manifest's ports, and
their submodules two levels down).

A capture is taken before and after every port and mutant, so it keeps a shallow copy of
each of those modules' namespaces (`_namespaces`, a copy made in C), holding the objects it
saw so that no new object can take an old one's `id()`; `changes` reads the attributes of a
module only where its namespace differs.

A port's first import can patch a framework it imports for the first time
(`flax.linen.relu = leaky_relu` at the top of its module): nothing was there
before to differ from. So each capture also lists the frameworks' attributes
defined in the package of a port from another package loaded here
(`implementations.OUTSIDE_LOADED`): one that appears is a change, and names
the package that planted it.
"""

from __future__ import annotations

import operator
import os
import sys
from typing import Any

import numpy as np

import implementations
from implementations import manifests

#: How deep below a framework's top-level module its modules are read (`torch.nn.functional`).
DEPTH = 2


def _framework_tops() -> frozenset[str]:
    tops = {module for _, entry in manifests.ports().values() for module in entry.modules}
    return frozenset({"numpy", *tops})


def capture() -> dict[str, Any]:
    """The state as it is now: plain data, cheap to compare (a few milliseconds)."""
    settings = {}
    for manifest in manifests.manifests():
        if manifest.state and sys.modules.get(manifest.device_module or manifest.engine):
            try:
                settings[manifest.stack] = manifests.resolve(manifest.state)()
            except Exception as error:  # a probe that fails is a fact, never a crash
                settings[manifest.stack] = {"error": f"{type(error).__name__}: {error}"}
    return {
        # Not what a framework writes for itself (an address, rewritten by the same port on its
        # next run: the stacks' `process_variables`): that is the framework's bookkeeping.
        "environment": worker_environment(),
        "numpy errors": np.geterr(),
        "settings": settings,
        "namespaces": (namespaces := _namespaces()),
        "planted": _planted(namespaces),
    }


def _planted(namespaces: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The frameworks' attributes defined in an outside port's package: name -> the port."""
    outside = {top: name for name, top in implementations.OUTSIDE_LOADED.items()}
    if not outside:
        return {}
    return {
        f"{module}.{attribute}": outside[owner]
        for module, namespace in namespaces.items()
        for attribute, (_, owner) in _functions(namespace).items()
        if owner in outside and module.split(".", 1)[0] != owner
    }


def _namespaces() -> dict[str, dict[str, Any]]:
    """A shallow copy of the namespace of each of the frameworks' loaded modules, by name."""
    tops = _framework_tops()
    found = {}
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".", 1)[0] not in tops or name.count(".") > DEPTH:
            continue
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is dict:  # a module-like object may have none, or a proxy
            found[name] = namespace.copy()
    return found


def _functions(namespace: dict[str, Any]) -> dict[str, tuple[int, str]]:
    """A namespace's public callables: each one's `id()` and the top-level package that
    defines it."""
    return {
        attribute: (id(value), str(getattr(value, "__module__", None) or "").split(".", 1)[0])
        for attribute, value in namespace.items()
        if not attribute.startswith("_") and callable(value)
    }


def _same(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether two copies of a namespace hold the same objects under the same names, compared
    by identity alone (an object's own `==` is never called)."""
    return before.keys() == after.keys() and all(map(operator.is_, before.values(), after.values()))


def _swapped(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[str]:
    """The public callables replaced between two captures by one defined elsewhere (a
    framework that swaps one of its own functions on first use, as dynamo wraps
    `torch.jit.trace`, is the framework's business)."""
    found = []
    for module, namespace in before.items():
        now = after.get(module)
        if now is None or _same(namespace, now):
            continue
        then, later = _functions(namespace), _functions(now)
        top = module.split(".", 1)[0]
        found += [
            f"{module}.{attribute}"
            for attribute, (identity, _) in then.items()
            if (new := later.get(attribute)) is not None and new[0] != identity and new[1] != top
        ]
    return sorted(found)


def changes(before: dict[str, Any], after: dict[str, Any], limit: int = 5) -> str:
    """What differs between two captures, for what both hold ("" when nothing does)."""
    found = []
    for part in ("environment", "numpy errors"):
        found += _differences(part, before[part], after[part])
    for stack, settings in before["settings"].items():
        found += _differences(f"{stack} settings", settings, after["settings"].get(stack, {}))
    swapped = _swapped(before["namespaces"], after["namespaces"])
    found += [f"{name} was replaced" for name in swapped]
    planted = after.get("planted", {})
    found += [
        f"{name} was replaced by code of the port {planted[name]}'s package"
        for name in sorted(planted.keys() - before.get("planted", {}).keys())
        if name not in swapped
    ]
    more = f" (and {len(found) - limit} more)" if len(found) > limit else ""
    return "; ".join(found[:limit]) + more


def worker_environment() -> dict[str, str]:
    """The environment a worker starts with: this process's, without what frameworks wrote
    in it for this process alone (`Manifest.process_variables`: in a child they would name
    this process's memory, and the child's framework writes its own)."""
    own = manifests.process_variables()
    return {name: value for name, value in os.environ.items() if name not in own}


def _differences(part: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [
        f"{part}: {key} {before[key]!r} -> {after[key]!r}"
        for key in sorted(before.keys() & after.keys())
        if before[key] != after[key]
    ]
