"""A whole suite run: every property on every port, and the mutation run.

Ports and the mutation run are independent jobs. With `jobs=2` they run in
two worker processes (one per core here); each worker sets up its own
environment and Hypothesis profile and reports progress through a queue.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import implementations
from implementations import Implementation, PortUnavailable

from . import environment, expectations, profiles
from .mutation import MutantResult, run_mutants
from .properties import PROPERTIES, Property
from .runner import Outcome, run_property

# Comparing the canonical port with itself proves nothing; its row says so.
REFERENCE_ONLY = frozenset({"a", "b", "c", "f"})


@dataclass
class PortReport:
    """One port's row: whether it loaded, its versions, and an outcome per property."""

    name: str
    state: str  # "available", "unavailable" or "broken"
    reason: str = ""
    framework: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.state == "broken" or any(o.status == "fail" for o in self.outcomes)


@dataclass
class SuiteReport:
    """Everything a run found, for the table and for `--json`."""

    profile: str
    max_examples: int | None
    scope: str
    canonical: str
    ports: list[PortReport]
    mutants: list[MutantResult] | None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        survived = any(m.status == "survived" for m in self.mutants or [])
        return survived or any(p.failed for p in self.ports)


def examples_per_property(prop: Property, max_examples: int | None) -> int:
    """How many examples a property will run (for progress totals)."""
    if prop.cases is not None:
        return len(prop.cases())
    if max_examples is not None:
        return max_examples
    from hypothesis import settings

    return settings().max_examples


def run_port(
    name: str,
    *,
    max_examples: int | None = None,
    scope: str = "menu",
    expectations_dir: Path | None = None,
    progress: Callable[[str, Any], None] | None = None,
) -> PortReport:
    """Every property on one port, against the canonical port."""
    started = time.perf_counter()
    try:
        port = implementations.load(name)
    except PortUnavailable as error:
        state = "unavailable" if error.missing else "broken"
        return PortReport(name, state, reason=error.reason)
    port.pin_matmul_precision()
    canonical = load_canonical()
    expected = expectations.load(name, expectations_dir)
    report = PortReport(name, "available", framework=port.framework, versions=port.versions())
    for prop in PROPERTIES:
        if name == implementations.CANONICAL and prop.id in REFERENCE_ONLY:
            outcome = Outcome(
                name, prop.key, "reference", message="the canonical port is the reference"
            )
        else:
            outcome = run_property(
                prop,
                port,
                canonical,
                max_examples=max_examples,
                scope=scope,
                on_example=(lambda: progress("advance", 1)) if progress else None,
            )
        report.outcomes.append(expected.apply(outcome))
        if progress:
            progress("property", prop.key)
    report.warnings = expected.warnings
    report.seconds = time.perf_counter() - started
    return report


def _port_job(name, profile, max_examples, scope, expectations_dir, queue) -> PortReport:
    environment.prepare()
    profiles.load(profile)
    return run_port(
        name,
        max_examples=max_examples,
        scope=scope,
        expectations_dir=expectations_dir,
        progress=lambda kind, value: queue.put((name, kind, value)),
    )


def _mutant_job(profile, queue) -> list[MutantResult]:
    environment.prepare()
    profiles.load(profile)
    canonical = load_canonical()
    return run_mutants(canonical, on_mutant=lambda result: queue.put(("mutants", "advance", 1)))


def load_canonical() -> Implementation | None:
    """The canonical port with its precision pinned, or None when its framework is missing."""
    try:
        canonical = implementations.load(implementations.CANONICAL)
    except PortUnavailable:
        return None
    canonical.pin_matmul_precision()
    return canonical


def run_suite(
    names: list[str],
    *,
    profile: str,
    max_examples: int | None = None,
    mutants: bool = True,
    jobs: int = 2,
    expectations_dir: Path | None = None,
    progress: Callable[[str, str, Any], None] | None = None,
) -> SuiteReport:
    """Run the suite on the named ports (and the mutants); never raises for a failing port.

    `progress(task, kind, value)` hears about each example ("advance") and
    each finished property, from whichever process runs it.
    """
    started = time.perf_counter()
    scope = "wide" if profile == "thorough" else "menu"
    notify = progress or (lambda task, kind, value: None)
    if jobs <= 1:
        reports = [
            run_port(
                name,
                max_examples=max_examples,
                scope=scope,
                expectations_dir=expectations_dir,
                progress=lambda kind, value, name=name: notify(name, kind, value),
            )
            for name in names
        ]
        mutant_results = None
        if mutants:
            mutant_results = run_mutants(
                load_canonical(), on_mutant=lambda r: notify("mutants", "advance", 1)
            )
    else:
        reports, mutant_results = _run_parallel(
            names, profile, max_examples, scope, mutants, jobs, expectations_dir, notify
        )
    return SuiteReport(
        profile=profile,
        max_examples=max_examples,
        scope=scope,
        canonical=implementations.CANONICAL,
        ports=reports,
        mutants=mutant_results,
        seconds=time.perf_counter() - started,
    )


def _run_parallel(names, profile, max_examples, scope, mutants, jobs, expectations_dir, notify):
    context = multiprocessing.get_context("spawn")  # JAX and torch dislike fork()
    with context.Manager() as manager, ProcessPoolExecutor(jobs, mp_context=context) as pool:
        queue = manager.Queue()
        # The mutation run is the longest job: start it first.
        mutant_future = pool.submit(_mutant_job, profile, queue) if mutants else None
        futures = [
            pool.submit(_port_job, name, profile, max_examples, scope, expectations_dir, queue)
            for name in names
        ]
        pending = [*futures, *([mutant_future] if mutant_future else [])]
        while any(not f.done() for f in pending) or not queue.empty():
            try:
                task, kind, value = queue.get(timeout=0.1)
            except Exception:  # queue.Empty, through the manager's proxy
                continue
            notify(task, kind, value)
        reports = [f.result() for f in futures]
        mutant_results = mutant_future.result() if mutant_future else None
    return reports, mutant_results
