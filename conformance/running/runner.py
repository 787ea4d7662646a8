"""Run one property on one port, and collect what happened.

The CLI, its worker processes and the pytest plugin all run properties
through `run_property`, so a port passes or fails the same way under each.

Two ways to get the examples, with the same examples either way:

- **from the bank**, under a derandomized profile (`ci`): the cases and the
  canonical side of each are made once per machine and kept
  (`conformance.running.example_bank`); the port's checks run on them directly. The first
  failure is then handed to Hypothesis, which draws the same cases again,
  reaches the same failure and shrinks it;
- **from Hypothesis** directly (`dev`, `thorough`, or replaying a blob).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import Phase, given, reproduce_failure, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import DidNotReproduce, FailedHealthCheck, InvalidArgument
from hypothesis.reporting import with_reporter

import implementations
from implementations.contract import Implementation

from ..checking.checks import ConformanceError
from ..checking.properties import Property
from ..checking.strategies import describe, shape_key
from . import example_bank, framework_caches, replays, scratch
from .sealed import is_read_only_error, sealed

#: Shrinking one failure stops after this many seconds (`REMAT_SHRINK_SECONDS` sets it): a
#: port whose every example compiles anew shrank for over 15 minutes (Hypothesis's own bound
#: is 5). It is read between examples, so a shrink lasts at most this and one example.
SHRINK_ENV, SHRINK_SECONDS = "REMAT_SHRINK_SECONDS", 60.0
# Hypothesis's note with the blob that replays a failure exactly.
_BLOB = re.compile(r"@reproduce_failure\('([^']+)', b'([^']+)'\)")

#: Every status an outcome can have; the last three fail a run.
STATUSES = ("pass", "skip", "reference", "xfail", "xpass", "fail", "crashed", "timeout")
FAILING = frozenset({"fail", "crashed", "timeout"})


def without_decorator_advice(notes: str) -> str:
    """Hypothesis's notes without its "add @reproduce_failure(...) as a decorator on your
    test function" line, which means nothing on the command line: the blob goes into the
    replay command's `--reproduce` instead (`Outcome.reproduce`)."""
    return "\n".join(line for line in notes.splitlines() if not _BLOB.search(line)).strip()


#: How a passing outcome's message starts when `--reproduce` replayed an example that passes now.
DID_NOT_REPRODUCE = "did not reproduce"

Canonical = Callable[[], Implementation | None]  # the canonical port, loaded when first asked


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
    canonical: Canonical,
    *,
    max_examples: int | None = None,
    scope: str = "menu",
    on_example: Callable[[str], None] | None = None,
    on_prepare: Callable[[str], None] | None = None,
    canonical_identity: Callable[[], tuple] | None = None,
    shrink: bool = True,
    database: Path | None = None,
    reproduce: str = "",
) -> Outcome:
    """Run one property on one port; never raises for a failing port.

    A failure whose error names a file in a framework's compilation cache
    (`framework_caches`) is run again once with that cache off: the port
    fails only if it fails again, and the outcome's message says which
    cache was at fault.

    **Arguments:**

    - `canonical`: returns the canonical port (None when it cannot load);
      called only when the property's canonical side must be computed.
    - `max_examples`: overrides the active Hypothesis profile's count.
    - `scope`: which shapes to draw (see `strategies.shapes`).
    - `on_example(description)`: called before each example, with a short
      description of it (for progress bars, and to name the example a
      crashing port died on); `on_prepare(description)` likewise, before
      the canonical side of an example is made.
    - `canonical_identity`: the canonical port's name and versions, for the
      example bank's files (by default read off the loaded port: a worker
      that can tell them without loading it saves the import).
    - `shrink`: let Hypothesis shrink a failure to a minimal example (slow, but
      the report is clearer); the mutation run only needs to know it failed.
    - `database`: a directory for Hypothesis's example database, so that a
      rerun tries the last failing example first; None keeps none.
    - `reproduce`: a blob from an earlier failure, to replay that example only.
    """
    arguments = dict(
        max_examples=max_examples, scope=scope, on_example=on_example, on_prepare=on_prepare,
        canonical_identity=canonical_identity, shrink=shrink, database=database,
        reproduce=reproduce,
    )  # fmt: skip
    try:
        outcome, error = _run_property(prop, port, canonical, **arguments)
    except _StaleReference:  # dropped: made again, once (a second one is made here, now)
        outcome, error = _run_property(prop, port, canonical, **arguments)
    blamed = framework_caches.blamed(error) if error is not None else None
    if blamed is None:
        return outcome
    name, directory = blamed
    framework_caches.turn_off(name)
    again, _ = _run_property(prop, port, canonical, **arguments)
    note = (
        f"(the first attempt failed on a file in {name}'s compilation cache {directory}; "
        f"run again with that cache off, it {'failed again' if again.failed else 'passed'}"
        f"{'' if again.failed else ': the cache was at fault, not the port'}"
        f"{'' if again.failed else f'. The first failure: {outcome.message}'})"
    )
    again.message = f"{again.message}\n{note}" if again.message else note
    return again


def _run_property(
    prop: Property, port: Implementation, canonical: Canonical, *, max_examples, scope,
    on_example, on_prepare, canonical_identity, shrink, database, reproduce,
) -> tuple[Outcome, BaseException | None]:  # fmt: skip
    """`run_property` without the cache retry: the outcome, and the port's error if it failed."""
    max_examples = prop.capped(max_examples)  # a costly property runs fewer
    run = _Run(prop, port, canonical, on_example, on_prepare)
    run.canonical_identity = canonical_identity
    reason = prop.not_applicable(port) if prop.not_applicable is not None else None
    if reason:  # nothing to check on this port: said so, never counted a pass
        return run.finish("skip", None, reason), None
    try:
        if prop.cases is not None:  # a fixed list, run in full; it needs no reference
            for case in prop.cases():
                run.one(case, None)
        elif example_bank.derandomized() and not reproduce:
            run.from_bank(scope, max_examples)
        else:
            run.from_hypothesis(scope, max_examples, shrink, database, reproduce)
    except (InvalidArgument, FailedHealthCheck):
        raise  # a bug in the suite's own strategies, not in the port
    except DidNotReproduce as error:  # the replayed example passes now (or is of another test)
        if "shape of the test data has changed" in str(error).lower():  # not this test's blob
            message = replays.cannot_replay(reproduce, port.name, prop.key, error)
            raise scratch.RunFault(message) from None
        message = f"{DID_NOT_REPRODUCE}: the replayed example does not fail now ({error})"
        return run.finish("pass", None, message), None
    except _NoCanonical:
        return run.finish("skip", None, "the canonical port is not available"), None
    except _ProcessLost as lost:  # the port's own process crashed or hung: said as such
        error = lost.error
        raise_if_the_run_s(error)
        status = error.suite_status
        message = f"[{port.name}] {status}: {type(error).__name__}: {error}"
        return run.finish(status, error, message), error
    except CanonicalFailed as error:  # not the port's doing, but nothing can be compared
        return run.finish("fail", error.__cause__, str(error)), error
    except Exception as error:  # a ConformanceError, or the port raised: a failure
        raise_if_the_run_s(error)  # Hypothesis's own report met the full disk too
        if isinstance(error, ConformanceError):
            failure = run.finish("fail", error, f"{error}")
        else:
            message = f"[{port.name}] raised {type(error).__name__}: {error}"
            failure = run.finish("fail", error, message)
        if reproduce and reproduce != _NOT_BANKED and not failure.reproduce:
            failure.reproduce = reproduce  # a replay's replay command replays it again
        if not (run.banked and shrink):
            return failure, error
        # Hypothesis draws the same cases again, reaches this failure, and shrinks it.
        shrunk, shrunk_error = _run_property(
            prop, port, canonical, max_examples=max_examples, scope=scope,
            on_example=on_example, on_prepare=on_prepare, canonical_identity=None,
            shrink=True, database=None, reproduce=_NOT_BANKED,
        )  # fmt: skip
        if shrunk.status == "fail":
            return shrunk, shrunk_error
        failure.message += (
            "\n(Hypothesis did not meet this failure again when it drew the same examples "
            "to shrink it: the port gives different answers to the same call)"
        )
        return failure, error
    return run.finish("pass", None, ""), None


def shrink_seconds() -> float:
    """How long one failure may be shrunk: `$REMAT_SHRINK_SECONDS`, else `SHRINK_SECONDS`."""
    setting = os.environ.get(SHRINK_ENV, "")
    try:
        seconds = float(setting) if setting else SHRINK_SECONDS
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(f"{SHRINK_ENV}={setting!r}: expected a number of seconds, 0 or more")
    return seconds


@contextlib.contextmanager
def _shrinking_for(seconds: float):
    """Bound Hypothesis's shrinking (its engine's `MAX_SHRINKING_SECONDS`, which it documents
    as there to be changed) for a while."""
    from hypothesis.internal.conjecture import engine

    saved = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = seconds
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = saved


# Passed as `reproduce` to take the Hypothesis path without replaying a blob.
_NOT_BANKED = "\0draw"


class _StaleReference(BaseException):
    """A kept reference disagreed with one made now (`_Run._recheck`): run the property again.
    A BaseException: no verdict, and nothing for Hypothesis to shrink."""


class _NoCanonical(Exception):
    """The property needs the canonical port, and it cannot load."""


class _ProcessLost(BaseException):
    """A port's own process crashed or hung (an error with `suite_status`, "crashed" or
    "timeout": `implementations.process`). A BaseException, so that Hypothesis does not
    shrink it: each try would start the process again, or wait out the timeout again."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def raise_if_the_run_s(error: BaseException) -> None:
    """A failure that is the machine's, not the port's, raised as the run's: a full disk
    (`scratch.DiskFull`), or a working or temporary directory gone (`scratch.RunFault`)."""
    if scratch.disk_full(error):
        raise scratch.DiskFull(error) from error
    fault = scratch.environment_fault()
    if fault:
        raise scratch.RunFault(fault) from error


class CanonicalFailed(Exception):
    """Making the canonical side of an example raised: the reference, not the port, failed."""


def prepare(prop: Property, canonical: Implementation | None, case: Any) -> Any:
    """`prop.prepare(canonical, case)`, with its failures said to be the canonical port's."""
    try:
        # Made in the canonical's clean process where this one ran outside code (`clean`).
        remote = getattr(canonical, "remote_prepare", None)
        return remote(prop.key, case) if remote is not None else prop.prepare(canonical, case)
    except Exception as error:
        raise_if_the_run_s(error)  # the machine's, not the canonical port's
        who = f"the canonical port {canonical.name!r}" if canonical is not None else "the suite"
        raise CanonicalFailed(
            f"{who} raised {type(error).__name__} while making the reference for "
            f"{prop.key} ({describe(case)}): {error}"
        ) from error


class _Run:
    """One property on one port: its examples, its tally, its clock."""

    def __init__(self, prop: Property, port, canonical: Canonical, on_example, on_prepare):
        self.prop, self.port, self.canonical = prop, port, canonical
        self.on_example, self.on_prepare = on_example, on_prepare
        self.tally, self.banked = _Tally(), False
        self.canonical_identity: Callable[[], tuple] | None = None
        self.started = time.perf_counter()

    def one(self, case: Any, reference: Any) -> None:
        if self.on_example is not None:
            self.on_example(describe(case))
        start = time.perf_counter()
        try:
            # Its own copy, sealed: no write of the port's reaches what another port (or
            # this check, after the call) reads.
            ratio = self.prop.check(self.port, reference, sealed(case))
        except Exception as error:
            if getattr(error, "suite_status", None) in ("crashed", "timeout"):
                raise _ProcessLost(error) from error
            raise_if_the_run_s(error)  # a print or a cache write met a full disk
            if is_read_only_error(error):  # the port's own: said as what it is
                raise ConformanceError(
                    f"[{self.port.name}] wrote to an array it was handed read-only (params, x "
                    f"or cotangent: the contract hands them read-only): "
                    f"{type(error).__name__}: {error}"
                ) from error
            raise
        self.tally.add(case, ratio, time.perf_counter() - start)

    def from_bank(self, scope: str, max_examples: int | None) -> None:
        self.banked = True
        remote = self._clean_bank()
        if remote is not None:  # this process ran outside code: the clean one makes them
            identity = (self.canonical_identity or self._identity)()
            cases = example_bank.cases(self.prop, scope, max_examples)
            references = example_bank.kept_references(self.prop, cases, identity)
            if references is None:  # made, and kept, by the clean process, with its cases
                cases, references = remote()(self.prop.key, scope, max_examples, identity)
        else:
            cases = example_bank.cases(self.prop, scope, max_examples)
            references = [None] * len(cases)
        if remote is None and self.prop.prepare is not None:
            references = example_bank.references(
                self.prop,
                cases,
                self._canonical_or_raise,
                prepare,
                self.on_prepare,
                identity=self.canonical_identity,
            )
        for case, reference in zip(cases, references, strict=True):
            try:
                self.one(case, reference)
            except Exception:
                if getattr(references, "read", False):
                    self._recheck(case, reference, references.path)
                raise

    def _clean_bank(self) -> Callable[[], Callable] | None:
        """Where this process ran a port from another package and the property needs the
        canonical side: what gives the clean process's bank
        (`clean.CleanCanonical.remote_references`), started only if asked."""
        if not (self.prop.needs_canonical and self.prop.prepare is not None):
            return None
        identity = (self.canonical_identity or self._identity)()
        if not implementations.outside_code(but=identity[0]):
            return None
        canonical = self._canonical_or_raise
        return lambda: getattr(canonical(), "remote_references", None) or self._made_here

    def _made_here(self, key: str, scope: str, max_examples: int | None, identity: tuple):
        """The bank's path when the canonical port is this process's own (a caller that
        hands one, as a test does): made here."""
        cases = example_bank.cases(self.prop, scope, max_examples)
        references = example_bank.references(
            self.prop, cases, self._canonical_or_raise, prepare, self.on_prepare,
            identity=lambda: identity,
        )  # fmt: skip
        return cases, references

    def _identity(self) -> tuple:
        return example_bank.canonical_identity(self._canonical_or_raise())

    def _recheck(self, case: Any, kept: Any, path: Path) -> None:
        """A port failed against a kept reference: make that reference again, here and now.
        One that disagrees is not the port's failure: the entry is dropped, with a warning,
        and the property is run again on references made now (`_StaleReference`)."""
        fresh = prepare(self.prop, self._canonical_or_raise(), case)
        if not example_bank.agrees(fresh, kept):
            why = (
                f"disagrees with the canonical side of {describe(case)} made now (a process "
                "that ran other code made it)"
            )
            example_bank.drop(path, why)
            raise _StaleReference

    def from_hypothesis(self, scope, max_examples, shrink, database, reproduce) -> None:
        canonical = self._canonical_or_raise() if self.prop.needs_canonical else None

        def check(case: Any) -> None:
            reference = prepare(self.prop, canonical, case) if self.prop.prepare else None
            self.one(case, reference)

        overrides: dict[str, Any] = {
            "database": DirectoryBasedExampleDatabase(database) if database else None
        }
        # Never Hypothesis's explain phase: its "Explanation" lists lines of the suite's own
        # code that only failing examples ran, which says nothing about the port.
        phases = [Phase.explicit, Phase.reuse, Phase.generate]
        overrides["phases"] = [*phases, Phase.target, Phase.shrink] if shrink else phases
        if max_examples is not None:
            overrides["max_examples"] = max_examples
        test = given(self.prop.strategy(scope))(example_bank.example)
        if reproduce and reproduce != _NOT_BANKED:
            test = reproduce_failure(*replays.parse(reproduce).hypothesis)(test)
        bound, failed_at = shrink_seconds(), []

        def noting(case: Any) -> None:
            try:
                check(case)
            except Exception:
                if not failed_at:  # when the first failure was met: shrinking starts soon
                    failed_at.append(time.perf_counter())
                raise

        # What Hypothesis reports (a replayed failure's case, which it prints rather than
        # notes) goes into the failure's message, never to stdout: the port's output is the
        # port's own lines only.
        reported: list[str] = []
        try:
            with (
                example_bank.sending_cases_to(noting),
                _shrinking_for(bound),
                with_reporter(lambda text: reported.append(str(text))),
            ):
                settings(**overrides)(test)()
        except BaseException as error:
            notes = "\n".join(getattr(error, "__notes__", []))
            for text in reported:
                if text.strip() and text not in notes:
                    error.add_note(text)
            if shrink and failed_at and time.perf_counter() - failed_at[0] > bound:
                error.add_note(
                    f"(shrinking stopped after {bound:g} s, the bound {SHRINK_ENV} sets: the "
                    "example may not be the smallest)"
                )
            raise

    def _canonical_or_raise(self) -> Implementation:
        canonical = self.canonical()
        if canonical is None:
            raise _NoCanonical
        return canonical

    def finish(self, status: str, error, message: str) -> Outcome:
        notes = "\n".join(getattr(error, "__notes__", [])) if error is not None else ""
        blob = _BLOB.search(notes)
        notes = without_decorator_advice(notes)
        return Outcome(
            port=self.port.name,
            property=self.prop.key,
            status=status,
            examples=self.tally.examples,
            worst_ratio=self.tally.worst_ratio,
            message=f"{message}\n{notes}" if notes else message,  # the notes whole
            reproduce=replays.make(self.port.name, self.prop.key, *blob.groups()) if blob else "",
            seconds=time.perf_counter() - self.started,
            first_use_seconds=self.tally.first_use_seconds,
        )
