"""What each port's instrument must show under each remat policy, and who said so.

Two sources, one form (`implementations.expectations`):

- **the port's own declaration**: a port class's `expectations` (policy label
  -> `Expected`), or a process port's `hello` (docs/PROTOCOL.md,
  *Expectations*), for its `instrument_family`. An outside framework brings
  its own, with a reason per policy; the suite holds it to the policy
  vocabulary (`implementations.expectations.contradictions`) and then to
  what the port's records show.
- **the suite's**: every stack declares its instrument families' expected
  records and its documented degradations in its folder (the manifest names
  the module). This module gathers them.

A port's own declaration comes first; otherwise its family's table in the
suite. `source(port)` says whose expectation a port is held to, for reports.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from implementations import manifests
from implementations.expectations import (
    Degradation,
    Expectations,
    Expected,
    contradictions,
    expect,
)
from implementations.policies import Policy

__all__ = [
    "Contradiction",
    "Degradation",
    "Expected",
    "degradations",
    "expect",
    "expected",
    "family",
    "own",
    "source",
    "tables",
]


class Contradiction(ValueError):
    """A port's own expectations contradict the policy vocabulary."""


@functools.cache
def _declared() -> tuple[tuple[str, Expectations], ...]:
    """Each stack's declaration, with the file that holds it."""
    found = []
    for manifest in manifests.manifests():
        if manifest.expectations:
            module = manifest.expectations.split(":", 1)[0]
            found.append(
                (module.replace(".", "/") + ".py", manifests.resolve(manifest.expectations))
            )
    return tuple(found)


def tables() -> dict[str, dict[str, Any]]:
    """Every family the suite's stacks declare: family -> policy label or name -> `Expected`
    (or a function of the sizes giving one)."""
    merged: dict[str, dict[str, Any]] = {}
    for _, declaration in _declared():
        for name, table in declaration.families.items():
            if name in merged:
                raise ValueError(f"instrument family {name!r} is declared twice")
            merged[name] = dict(table)
    return merged


def _files() -> dict[str, str]:
    return {name: path for path, d in _declared() for name in d.families}


def all_degradations() -> tuple[Degradation, ...]:
    """Every documented degradation, from every stack."""
    return tuple(d for _, declaration in _declared() for d in declaration.degradations)


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


def check_own(port: Any) -> None:
    """Raise `Contradiction` where the port's own expectations contradict the vocabulary."""
    table = own(port)
    if table is None:
        return
    problems = contradictions(table, (4, 7))
    if problems:
        raise Contradiction(
            f"the expectations it declares for the {family(port) or 'unknown'} instrument "
            f"contradict the policy vocabulary: {'; '.join(problems)}"
        )


def expected(
    port: Any, policy: Policy, dim: int | None = None, features: int | None = None
) -> Expected | None:
    """What `port`'s instrument must show under `policy` (its label, e.g. `budget(0)`, first,
    then its name) at sizes `dim`, `features`; None where nothing is written down. The port's
    own declaration first (`Contradiction` where it contradicts the vocabulary), then its
    family's table. An entry may be a function of the sizes."""
    table = own(port)
    if table is not None:
        check_own(port)
    else:
        table = tables().get(family(port), {})
    entry = table.get(policy.label) or table.get(policy.name)
    return entry(dim, features) if callable(entry) else entry


def degradations(port: Any, policy: str) -> tuple[Degradation, ...]:
    """The documented degradations for `port` (its family, or its stack's) under `policy`."""
    families = {family(port)}
    if not getattr(port, "instrument_family", ""):  # a declared family is the whole story
        families.add(getattr(getattr(port, "stack", None), "name", ""))
    return tuple(d for d in all_degradations() if d.family in families and d.policy == policy)
