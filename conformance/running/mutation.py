"""The mutation run: each mutant against the properties, until one rejects it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .. import mutants as registry
from ..checking.properties import BY_ID, BY_KEY, PROPERTIES
from .runner import Canonical, run_property

# The property that must reject a mutant (its `killed_by`, the one that looks at
# its bug) runs first, in full: the mutant almost always falls to its first example,
# and no other property's compiles are paid for it. Should it survive, the others
# run in this order: the cheapest first, by each property's declared `cost`. A
# mutant may name properties to try first among them (`MutantSpec.first`).
KILL_ORDER = tuple(p.id for p in sorted(PROPERTIES, key=lambda p: p.cost))
# Each mutant is a new set of functions to compile, so the mutation run draws from
# the small shapes only, with fewer examples than a port gets.
MUTANT_EXAMPLES = 25
# A first, scouting pass gives each drawn property this many examples: a mutant
# almost always falls to the first example of the property that can see its
# bug, while running every property before it in full (h's 25 examples, e's,
# f's, ...) cost four fifths of the mutation run. The second pass runs the
# full count, so no mutant survives that the full run would kill. Fixed case
# lists (g) run in full in the second pass only.
SCOUT_EXAMPLES = 2
MUTANT_EXAMPLES_NOTE = (
    f"{SCOUT_EXAMPLES} then {MUTANT_EXAMPLES} examples per property, small shapes, no shrinking"
)


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
    """Run the property that must reject the mutant (`killed_by`) in full, then the others in
    `KILL_ORDER` (the mutant's `first` ones before) until one fails it: first a few examples
    of each, then the full count of each."""
    started, examples = time.perf_counter(), 0
    expected = (BY_KEY[mutant.killed_by].id,) if mutant.killed_by else ()
    order = [p for p in dict.fromkeys((*mutant.first, *KILL_ORDER)) if p not in expected]
    scouting = [(p, SCOUT_EXAMPLES) for p in order if BY_ID[p].cases is None]
    passes = [(p, max_examples) for p in expected] + scouting
    for prop_id, count in (*passes, *((p, max_examples) for p in order)):
        if count > max_examples:
            continue
        outcome = run_property(
            BY_ID[prop_id],
            mutant.port,
            canonical,
            max_examples=count,
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
