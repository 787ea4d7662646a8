"""Run properties on ports with Hypothesis, and collect what happened.

The CLI and the pytest plugin both run properties through `run_property`,
so a port passes or fails the same way under either.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from hypothesis import Phase, given, settings
from hypothesis.errors import FailedHealthCheck, InvalidArgument

from implementations.contract import Implementation

from .checks import ConformanceError
from .properties import Property
from .strategies import ExerciseCase, ParamCase

NOTE_LIMIT = 600  # characters of Hypothesis's falsifying-example note kept in a message


@dataclass
class Outcome:
    """What one property did on one port.

    `status` is "pass", "fail", "skip", "xfail" (an expected failure) or
    "xpass" (an expected failure that passed: a stale expectation).
    `first_use_seconds` is the time spent on examples whose shape the
    property had not seen yet (tracing and compiling); `seconds` is the total.
    """

    port: str
    property: str
    status: str
    examples: int = 0
    worst_ratio: float | None = None
    message: str = ""
    seconds: float = 0.0
    first_use_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Tally:
    examples: int = 0
    worst_ratio: float | None = None
    seconds: float = 0.0
    first_use_seconds: float = 0.0
    shapes: set = field(default_factory=set)

    def add(self, case: Any, ratio: float | None, seconds: float) -> None:
        self.examples += 1
        self.seconds += seconds
        key = _shape_key(case)
        if key not in self.shapes:
            self.shapes.add(key)
            self.first_use_seconds += seconds
        if ratio is not None:
            self.worst_ratio = ratio if self.worst_ratio is None else max(self.worst_ratio, ratio)


def _shape_key(case: Any) -> Any:
    if isinstance(case, ExerciseCase):
        return ("exercise", case.dim, int(case.features))
    if isinstance(case, ParamCase):
        return ("params", case.params.dim, case.params.features)
    if isinstance(case, tuple) and case and isinstance(case[0], ParamCase):
        return ("evidence", case[0].params.dim, case[0].params.features)
    return ("case", repr(case)[:80])


def run_property(
    prop: Property,
    port: Implementation,
    canonical: Implementation | None,
    *,
    max_examples: int | None = None,
    scope: str = "menu",
    on_example: Callable[[], None] | None = None,
    shrink: bool = True,
) -> Outcome:
    """Run one property on one port; never raises for a failing port.

    **Arguments:**

    - `max_examples`: overrides the active Hypothesis profile's count.
    - `scope`: which shapes to draw (see `strategies.shapes`).
    - `on_example`: called after each example, for progress bars.
    - `shrink`: let Hypothesis shrink a failure to a minimal example (slow, but
      the report is clearer); the mutation run only needs to know it failed.
    """
    if prop.needs_canonical and canonical is None:
        return Outcome(port.name, prop.key, "skip", message="the canonical port is not available")
    tally = _Tally()

    def one(case: Any) -> None:
        start = time.perf_counter()
        ratio = prop.check(port, canonical, case)
        tally.add(case, ratio, time.perf_counter() - start)
        if on_example is not None:
            on_example()

    started = time.perf_counter()
    try:
        if prop.cases is not None:
            for case in prop.cases():
                one(case)
        else:
            overrides: dict[str, Any] = {"database": None}
            if not shrink:
                overrides["phases"] = [Phase.explicit, Phase.reuse, Phase.generate]
            if max_examples is not None:
                overrides["max_examples"] = max_examples
            settings(**overrides)(given(prop.strategy(scope))(one))()
    except (InvalidArgument, FailedHealthCheck):
        raise  # a bug in the suite's own strategies, not in the port
    except ConformanceError as error:
        return _finish(tally, port, prop, "fail", _message(error), started)
    except Exception as error:  # the port crashed: that is a failure too
        message = f"raised {type(error).__name__}: {error}"
        return _finish(
            tally, port, prop, "fail", f"[{port.name}] {message}{_notes(error)}", started
        )
    return _finish(tally, port, prop, "pass", "", started)


def _finish(tally: _Tally, port, prop, status: str, message: str, started: float) -> Outcome:
    return Outcome(
        port=port.name,
        property=prop.key,
        status=status,
        examples=tally.examples,
        worst_ratio=tally.worst_ratio,
        message=message,
        seconds=time.perf_counter() - started,
        first_use_seconds=tally.first_use_seconds,
    )


def _message(error: BaseException) -> str:
    return f"{error}{_notes(error)}"


def _notes(error: BaseException) -> str:
    notes = "\n".join(getattr(error, "__notes__", []))
    if not notes:
        return ""
    if len(notes) > NOTE_LIMIT:
        notes = notes[:NOTE_LIMIT] + " ..."
    return "\n" + notes
