"""A property of the suite: what one module under `properties/` defines (`PROPERTY`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from implementations.contract import Implementation

from .schema import Declaration


@dataclass(frozen=True)
class Property:
    """One property: its letter, what it checks, its inputs, and the two halves of its check.

    **Arguments:**

    - `id`: its letter (the registry orders by it).
    - `name`: a short name for reports and test ids.
    - `title`: one line for people.
    - `check`: `(port, reference, case) -> worst ratio or None`: the port's
      side; it raises `ConformanceError` when the port breaks the property.
    - `prepare`: `(canonical, case) -> reference`: what the port is compared
      with (the canonical port's results, the error bounds). It depends on
      the case alone, so a run may make it once and keep it (`bank`);
      `canonical` is None for properties that do not need it. None: the
      check needs no reference.
    - `strategy`: `scope -> SearchStrategy` of cases, for Hypothesis (scope:
      see `strategies.shapes`).
    - `cases`: instead of a strategy, a finite list run in full.
    - `needs_canonical`: False for properties a port can meet on its own.
    - `examples`: at most this many examples per run, whatever the profile
      asks (a property whose example is costly); None: the profile's.
    - `share`: this share of the examples asked for (at least one), for a property whose
      verdict turns on the shape, not on the values; None: all of them.
    - `not_applicable`: `port -> reason or None`: why the property has nothing to check on
      a port (it is then reported skipped, with the reason, never passed).
    - `checks_canonical`: the canonical port is checked too, against its own reference (a
      property whose port-side check says more than the values: (k)'s records).
    - `cost`: what its check costs a mutant, against the others' (each property its own; in
      tens, so that a new property takes a place between two without renumbering them): the
      mutation run tries the cheapest first (`conformance.running.mutation.KILL_ORDER`).
    - `reads`: the declarations it reads beyond the contract's methods, typed (`schema`).
    - `mutants`: the suite's own mutants it must kill, by name (`conformance.mutants`); a
      stack's mutants name the property that must kill them in their manifest
      (`MutantEntry.killed_by`), so that no framework is named here.
    """

    id: str
    name: str
    title: str
    check: Callable[[Implementation, Any, Any], float | None]
    prepare: Callable[[Implementation | None, Any], Any] | None = None
    strategy: Callable[[str], st.SearchStrategy] | None = None
    cases: Callable[[], Sequence[Any]] | None = None
    needs_canonical: bool = True
    examples: int | None = None
    share: float | None = None
    not_applicable: Callable[[Implementation], str | None] | None = None
    checks_canonical: bool = False
    cost: int = 0
    reads: tuple[Declaration, ...] = ()
    mutants: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.id}_{self.name}"

    def capped(self, max_examples: int | None) -> int | None:
        """`max_examples` (None: the profile's), times `share`, at most `examples`."""
        if self.examples is None and self.share is None:
            return max_examples
        if max_examples is None:
            from hypothesis import settings

            max_examples = settings().max_examples
        if self.share is not None:
            max_examples = max(1, math.ceil(max_examples * self.share))
        return max_examples if self.examples is None else min(max_examples, self.examples)
