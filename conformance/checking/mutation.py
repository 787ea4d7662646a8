"""The mutation run: each mutant against the properties, until one rejects it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .. import mutants as registry
from ..running.runner import Canonical, run_property
from .properties import BY_ID

# Cheap properties first: most mutants die in the first one that can see them.
# A mutant may name properties to try first (`MutantSpec.first`).
KILL_ORDER = ("g", "h", "e", "f", "a", "b", "c", "d", "i", "j")
# Each mutant is a new set of functions to compile, so the mutation run draws from
# the small shapes only, with fewer examples than a port gets.
MUTANT_EXAMPLES = 25
MUTANT_EXAMPLES_NOTE = f"{MUTANT_EXAMPLES} examples per property, small shapes, no shrinking"


@dataclass
class MutantResult:
    """`status` is "killed" (with the property and its message), "survived", "unavailable",
    or "crashed" / "timeout" (its worker died or was stopped: not a kill)."""

    name: str
    bug: str
    status: str
    killed_by: str = ""
    message: str = ""
    examples: int = 0
    seconds: float = 0.0


def run_mutants(
    canonical: Canonical,
    names: Iterable[str],
    *,
    max_examples: int = MUTANT_EXAMPLES,
    on_example: Callable[[str], None] | None = None,
    canonical_identity: Callable[[], tuple] | None = None,
) -> Iterable[MutantResult]:
    """Run each named mutant in turn; yield its result as soon as it is known.

    `canonical()` gives the canonical port, loaded only where a property's
    canonical side must be made (see `runner.run_property`).
    """
    for name in names:
        mutant = registry.load(name)
        if mutant.port is None:
            yield MutantResult(mutant.name, mutant.bug, "unavailable", message=mutant.reason)
            continue
        yield run_mutant(mutant, canonical, max_examples, on_example, canonical_identity)


def run_mutant(
    mutant: registry.Mutant,
    canonical: Canonical,
    max_examples: int = MUTANT_EXAMPLES,
    on_example: Callable[[str], None] | None = None,
    canonical_identity: Callable[[], tuple] | None = None,
) -> MutantResult:
    """Run the properties in `KILL_ORDER` (the mutant's `first` ones before) until one fails it."""
    started, examples = time.perf_counter(), 0
    order = (*mutant.first, *(p for p in KILL_ORDER if p not in mutant.first))
    for prop_id in order:
        outcome = run_property(
            BY_ID[prop_id],
            mutant.port,
            canonical,
            max_examples=max_examples,
            scope="small",
            shrink=False,
            on_example=on_example,
            canonical_identity=canonical_identity,
        )
        examples += outcome.examples
        if outcome.status == "skip":  # no canonical port: no verdict is possible
            return MutantResult(
                mutant.name, mutant.bug, "unavailable", message=outcome.message, examples=examples
            )
        if outcome.status == "fail":
            seconds = time.perf_counter() - started
            return MutantResult(
                mutant.name, mutant.bug, "killed", outcome.property, outcome.message, examples,
                seconds,
            )  # fmt: skip
    seconds = time.perf_counter() - started
    return MutantResult(mutant.name, mutant.bug, "survived", examples=examples, seconds=seconds)


def score(results: list[MutantResult]) -> tuple[int, int]:
    """(killed, total) over the mutants that could run."""
    ran = [r for r in results if r.status != "unavailable"]
    return sum(r.status == "killed" for r in ran), len(ran)
