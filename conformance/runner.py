"""Run one property on one port with Hypothesis, and collect what happened.

The CLI, its worker processes and the pytest plugin all run properties
through `run_property`, so a port passes or fails the same way under each.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import Phase, given, reproduce_failure, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import FailedHealthCheck, InvalidArgument

from implementations.contract import Implementation

from .checks import ConformanceError
from .properties import Property
from .strategies import describe, shape_key

# Hypothesis's note with the blob that replays a failure exactly.
_BLOB = re.compile(r"@reproduce_failure\('([^']+)', b'([^']+)'\)")

#: Every status an outcome can have; the last three fail a run.
STATUSES = ("pass", "skip", "reference", "xfail", "xpass", "fail", "crashed", "timeout")
FAILING = frozenset({"fail", "crashed", "timeout"})


@dataclass
class Outcome:
    """What one property did on one port.

    **Arguments:**

    - `status`: one of `STATUSES`: "xfail" is an expected failure, "xpass" an
      expected failure that passed (a stale expectation), "reference" a
      property the canonical port is the reference for; "crashed" and
      "timeout" mean the port's worker process died or was stopped.
    - `examples`, `worst_ratio`: examples run, and the worst error/bound.
    - `message`: for a failure, every word of it, Hypothesis's notes included.
    - `reproduce`: Hypothesis's blob that replays the failing example.
    - `seconds`: the total; `first_use_seconds`: the part spent on examples
      whose shape the property had not seen yet (tracing and compiling).
    """

    port: str
    property: str
    status: str
    examples: int = 0
    worst_ratio: float | None = None
    message: str = ""
    reproduce: str = ""
    seconds: float = 0.0
    first_use_seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in FAILING


@dataclass
class _Tally:
    examples: int = 0
    worst_ratio: float | None = None
    first_use_seconds: float = 0.0
    shapes: set = field(default_factory=set)

    def add(self, case: Any, ratio: float | None, seconds: float) -> None:
        self.examples += 1
        key = shape_key(case)
        if key not in self.shapes:
            self.shapes.add(key)
            self.first_use_seconds += seconds
        if ratio is not None:
            self.worst_ratio = ratio if self.worst_ratio is None else max(self.worst_ratio, ratio)


def run_property(
    prop: Property,
    port: Implementation,
    canonical: Implementation | None,
    *,
    max_examples: int | None = None,
    scope: str = "menu",
    on_example: Callable[[str], None] | None = None,
    shrink: bool = True,
    database: Path | None = None,
    reproduce: str = "",
) -> Outcome:
    """Run one property on one port; never raises for a failing port.

    **Arguments:**

    - `max_examples`: overrides the active Hypothesis profile's count.
    - `scope`: which shapes to draw (see `strategies.shapes`).
    - `on_example(description)`: called before each example, with a short
      description of it (for progress bars, and to name the example a
      crashing port died on).
    - `shrink`: let Hypothesis shrink a failure to a minimal example (slow, but
      the report is clearer); the mutation run only needs to know it failed.
    - `database`: a directory for Hypothesis's example database, so that a
      rerun tries the last failing example first; None keeps none.
    - `reproduce`: a blob from an earlier failure, to replay that example only.
    """
    if prop.needs_canonical and canonical is None:
        return Outcome(port.name, prop.key, "skip", message="the canonical port is not available")
    tally = _Tally()

    def one(case: Any) -> None:
        if on_example is not None:
            on_example(describe(case))
        start = time.perf_counter()
        ratio = prop.check(port, canonical, case)
        tally.add(case, ratio, time.perf_counter() - start)

    started = time.perf_counter()
    try:
        if prop.cases is not None:
            for case in prop.cases():
                one(case)
        else:
            overrides: dict[str, Any] = {
                "database": DirectoryBasedExampleDatabase(database) if database else None
            }
            if not shrink:
                overrides["phases"] = [Phase.explicit, Phase.reuse, Phase.generate]
            if max_examples is not None:
                overrides["max_examples"] = max_examples
            test = given(prop.strategy(scope))(one)
            if reproduce:
                test = reproduce_failure(*reproduce.split(":", 1))(test)
            settings(**overrides)(test)()
    except (InvalidArgument, FailedHealthCheck):
        raise  # a bug in the suite's own strategies, not in the port
    except ConformanceError as error:
        return _finish(tally, port, prop, "fail", error, f"{error}", started)
    except Exception as error:  # the port raised: that is a failure too
        message = f"[{port.name}] raised {type(error).__name__}: {error}"
        return _finish(tally, port, prop, "fail", error, message, started)
    return _finish(tally, port, prop, "pass", None, "", started)


def _finish(tally, port, prop, status: str, error, message: str, started: float) -> Outcome:
    notes = "\n".join(getattr(error, "__notes__", [])) if error is not None else ""
    blob = _BLOB.search(notes)
    return Outcome(
        port=port.name,
        property=prop.key,
        status=status,
        examples=tally.examples,
        worst_ratio=tally.worst_ratio,
        message=f"{message}\n{notes}" if notes else message,  # the notes whole
        reproduce=f"{blob.group(1)}:{blob.group(2)}" if blob else "",
        seconds=time.perf_counter() - started,
        first_use_seconds=tally.first_use_seconds,
    )
