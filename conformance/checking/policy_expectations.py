"""What each port's instrument must show under each remat policy: the stacks' declarations.

Every stack declares its instrument families' expected records and its
documented degradations in its folder (`implementations.expectations`;
the manifest names the module). This module gathers them, and finds the
family a port is held to. See `implementations.expectations` for what an
`Expected` record says and how a degradation is pinned.
"""

from __future__ import annotations

import functools
from typing import Any

from implementations import manifests
from implementations.expectations import Degradation, Expectations, Expected, expect
from implementations.policies import Policy

__all__ = ["Degradation", "Expected", "degradations", "expected", "family", "tables"]

#: The protocol's test port (tests/process/cpp_port): its own bookkeeping.
_TEST_PORTS = Expectations(
    families={
        "cpp_port": {
            "none": expect("x h a", 4, why="its backward reads h (for relu's mask) and a"),
            "full": expect("x", 5, why="its backward reruns the hidden layer's matvec"),
        },
    },
)


@functools.cache
def _declared() -> tuple[Expectations, ...]:
    found = [manifests.resolve(m.expectations) for m in manifests.manifests() if m.expectations]
    return (*found, _TEST_PORTS)


def tables() -> dict[str, dict[str, Any]]:
    """Every declared family's table: family -> policy label or name -> `Expected` (or a
    function of the sizes giving one)."""
    merged: dict[str, dict[str, Any]] = {}
    for declaration in _declared():
        for name, table in declaration.families.items():
            if name in merged:
                raise ValueError(f"instrument family {name!r} is declared twice")
            merged[name] = dict(table)
    return merged


def all_degradations() -> tuple[Degradation, ...]:
    """Every documented degradation, from every stack."""
    return tuple(d for declaration in _declared() for d in declaration.degradations)


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


def expected(
    port: Any, policy: Policy, dim: int | None = None, features: int | None = None
) -> Expected | None:
    """What `port`'s instrument must show under `policy` (its label, e.g. `budget(0)`, first,
    then its name) at sizes `dim`, `features`; None where nothing is written down. An entry
    may be a function of the sizes, where the framework's choice depends on them."""
    table = tables().get(family(port), {})
    entry = table.get(policy.label) or table.get(policy.name)
    return entry(dim, features) if callable(entry) else entry


def degradations(port: Any, policy: str) -> tuple[Degradation, ...]:
    """The documented degradations for `port` (its family, or its stack's) under `policy`."""
    families = {family(port)}
    if not getattr(port, "instrument_family", ""):  # a declared family is the whole story
        families.add(getattr(getattr(port, "stack", None), "name", ""))
    return tuple(d for d in all_degradations() if d.family in families and d.policy == policy)
