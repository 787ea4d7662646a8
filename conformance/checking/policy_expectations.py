"""Whose declarations hold for a port, and who wrote them: its instrument family, the
expectations it declares itself, the stack folders' declarations, and the documented
degradations.

Two sources, one form (`implementations.expectations`):

- **the port's own declaration**: a port class's `expectations` (policy label
  -> `Expected`), or a process port's `hello` (docs/PROTOCOL.md,
  *Expectations*), for its `instrument_family`. An outside framework brings
  its own, with a reason per policy.
- **the suite's**: every stack declares its instrument families' expected
  records and its documented degradations in its folder (the manifest names
  the module). This module gathers them.

A port's own declaration comes first; otherwise its family's table in the suite.
`source(port)` says whose expectation a port is held to, for reports. Property (j) reads
the tables and holds a port to them (`properties.j_policies`); (k), the provenance of
records, the matrices and the version sweep read the family and the degradations here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from implementations import manifests
from implementations.expectations import Degradation, Expectations

__all__ = ["all_degradations", "declared", "degradations", "family", "own", "source"]


@functools.cache
def declared() -> tuple[tuple[str, Expectations], ...]:
    """Each stack's declaration, with the file that holds it."""
    found = []
    for manifest in manifests.manifests():
        if manifest.expectations:
            module = manifest.expectations.split(":", 1)[0]
            found.append(
                (module.replace(".", "/") + ".py", manifests.resolve(manifest.expectations))
            )
    return tuple(found)


def _files() -> dict[str, str]:
    return {name: path for path, d in declared() for name in d.families}


def all_degradations() -> tuple[Degradation, ...]:
    """Every documented degradation, from every stack."""
    return tuple(d for _, declaration in declared() for d in declaration.degradations)


def family(port: Any) -> str:
    """The instrument family whose expectations hold for `port`: its class's
    `instrument_family` where it declares one (so a mutant of the port, renamed, keeps it),
    else its manifest entry's, else its stack's name."""
    declared_family = getattr(port, "instrument_family", "")
    if declared_family:
        return declared_family
    entry = manifests.port(getattr(port, "name", ""))
    if entry is not None:
        manifest, found = entry
        return manifest.family_of(found)
    stack = getattr(port, "stack", None)
    return getattr(stack, "name", "") or ""


def own(port: Any) -> Mapping[str, Any] | None:
    """The expectations `port` declares itself (policy label -> `Expected`), or None."""
    table = getattr(port, "expectations", None)
    return table if isinstance(table, Mapping) and table else None


def source(port: Any) -> str:
    """Whose expectation `port` is held to, in words for reports ("" where none is written)."""
    name = family(port) or "unknown"
    if own(port) is not None:
        where = "its hello" if getattr(port, "hello", None) is not None else "its class"
        return f"the {name} instrument's, declared by the port itself ({where})"
    path = _files().get(name)
    if path is None:
        return ""
    return f"the {name} instrument's, declared by the suite ({path})"


def degradations(port: Any, policy: str) -> tuple[Degradation, ...]:
    """The documented degradations for `port` (its family, or its stack's) under `policy`."""
    families = {family(port)}
    if not getattr(port, "instrument_family", ""):  # a declared family is the whole story
        families.add(getattr(getattr(port, "stack", None), "name", ""))
    return tuple(d for d in all_degradations() if d.family in families and d.policy == policy)
