"""The properties every port must satisfy, one module each, and their registry.

Each property is a module of this folder named by its key (`a_init.py`, `b_forward.py`, ...):
its strategy, its check, the declarations it reads (`schema`), the suite's own mutants it must
kill (a stack's mutants say which property must kill them in their manifest, `killed_by`: a
framework is one folder), and its `PROPERTY`. The registry is built from the modules found
here, in the order of their letters: adding a property is adding its module (and the stacks'
declarations, and their tests); nothing else in the suite names the properties.

Each property has two halves. `prepare(canonical, case)` computes what the port is compared
with: the canonical port's results and the error bounds; it depends on the case alone, so a
run can make it once for every port (`conformance.running.example_bank`). `check(port,
reference, case)` runs the port, returns the worst error/bound ratio it saw (None where there
is no bound) and raises `ConformanceError` when the port breaks the property.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

from .spec import Property

__all__ = ["BY_ID", "BY_KEY", "PROPERTIES", "Property", "killer_of", "modules"]

#: A property's module: its key, a letter and a name (`k_composition`); the folder's other
#: modules (`spec`, `schema`, `shared`) hold what the properties share.
MODULE_NAME = re.compile(r"^[a-z]_[a-z][a-z0-9_]*$")


def modules() -> list[str]:
    """The names of this folder's property modules, in the order of their letters."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if MODULE_NAME.match(m.name))


def _load(name: str) -> Property:
    found = getattr(importlib.import_module(f"{__name__}.{name}"), "PROPERTY", None)
    if not isinstance(found, Property):
        raise TypeError(f"{__name__}.{name} must define PROPERTY, a Property")
    if found.key != name:
        raise ValueError(f"{__name__}.{name} defines the property {found.key!r}: name it so")
    return found


PROPERTIES: tuple[Property, ...] = tuple(_load(name) for name in modules())
BY_ID = {p.id: p for p in PROPERTIES}
BY_KEY = {p.key: p for p in PROPERTIES}
if len(BY_ID) != len(PROPERTIES):
    raise ValueError(f"two property modules share a letter: {modules()}")


def killer_of(mutant: str, declared: str = "") -> str:
    """The key of the property that must kill `mutant`: the one its stack's manifest declares
    (`declared`, the property's letter: `MutantEntry.killed_by`), or, for the suite's own
    mutants, the one whose `mutants` names it. `ValueError` naming `mutant` where none or
    several do, or where the declared letter is no property's."""
    found = [p.key for p in PROPERTIES if mutant in p.mutants]
    if declared:
        if declared not in BY_ID:
            raise ValueError(f"mutant {mutant!r}: killed_by {declared!r} is no property's letter")
        found.append(BY_ID[declared].key)
    if len(found) != 1:
        said = " and ".join(found) or "no property"
        raise ValueError(
            f"mutant {mutant!r}: {said} names it; exactly one must: its manifest's killed_by "
            "(a stack's), or one property module's MUTANTS (the suite's own)"
        )
    return found[0]
