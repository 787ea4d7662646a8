"""Deliberately broken ports. The suite must reject every one of them.

Each mutant is a port with one realistic bug. A mutant that passes every
property means the suite has a blind spot. Mutants load lazily, like ports,
so that a missing framework skips its mutants rather than breaking the run.
Each stack declares its own in its manifest (the canonical port's are the
JAX stack's); the suite's own breaks the process protocol. Each names its
`family`: the port whose framework it needs. The run hunts it in that
port's worker process (Keras, for one, allows a single backend per process).
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass

import implementations
from implementations import manifests
from implementations.contract import Implementation, StackUnavailable
from implementations.manifests import MutantEntry
from implementations.process import ProcessPortUnavailable

from ..checking.properties import killer_of


@dataclass(frozen=True)
class MutantSpec(MutantEntry):
    """A registered mutant: `name`, `target` ("module:Class"), `bug`, `family` (the port whose
    worker hunts it) and `first` (property ids tried before the usual order: the precision
    tier's mutants break the rigorous bounds on the small shapes the hunt draws, and pass the
    forward ones, (b) and (f), at D = F = 256 and 1024 (tests/core/checking/test_precision.py),
    where (i) sees them), as the stacks declare them in their manifests; and `killed_by`, the
    key of the property that must reject it, the one that looks at its bug (a kill by another
    property, or by a crash, would be a weaker proof): the one its manifest declares, or, for
    the suite's own, the property whose module names it (`killer_of`)."""

    killed_by: str = ""


def _spec(entry: MutantEntry) -> MutantSpec:
    fields = {f.name: getattr(entry, f.name) for f in dataclasses.fields(MutantEntry)}
    return MutantSpec(**{**fields, "killed_by": killer_of(entry.name, entry.killed_by)})


#: Every stack's mutants (the canonical port's are the JAX stack's), then the suite's own, of
#: the process protocol, by name.
MUTANTS: dict[str, MutantSpec] = {
    spec.name: _spec(spec)
    for spec in (
        *(spec for manifest in manifests.manifests() for spec in manifest.mutants),
        MutantEntry(
            "wire_ignores_policy",
            f"{__name__}.wire_port:WireIgnoresPolicy",
            "the canonical port as a process port that reads checkpoint, never the policy name",
            manifests.CANONICAL_PORT,
        ),
    )
}


@dataclass(frozen=True)
class Mutant:
    """A mutant's name, its bug, and the loaded port (None, with a reason, when it cannot load);
    `first` and `killed_by` as in `MutantSpec`."""

    name: str
    bug: str
    port: Implementation | None
    reason: str = ""
    first: tuple[str, ...] = ()
    killed_by: str = ""


def load(name: str) -> Mutant:
    """One mutant, loaded if its framework is installed."""
    spec = MUTANTS[name]
    module_name, _, attr = spec.target.partition(":")
    if spec.outside:  # as `implementations.load` marks a port from another package
        implementations.OUTSIDE_LOADED[name] = module_name.split(".")[0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        return Mutant(name, spec.bug, None, f"needs {error.name!r}, not installed")
    except StackUnavailable as error:  # e.g. Keras, already on another backend here
        return Mutant(name, spec.bug, None, str(error))
    try:
        port = getattr(module, attr)()
    except ProcessPortUnavailable as error:  # a process port whose program cannot run here
        return Mutant(name, spec.bug, None, str(error))
    if not getattr(port, "instrument_family", ""):  # renamed, it keeps its port's family
        entry = manifests.port(spec.family)
        if entry is not None:
            port.instrument_family = entry[0].family_of(entry[1])
    port.name = name  # reports and messages name the mutant
    return Mutant(name, spec.bug, port, first=spec.first, killed_by=spec.killed_by)
