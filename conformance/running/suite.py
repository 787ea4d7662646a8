"""A whole suite run: every property on every port, and the mutation run.

Each port's work runs in a worker process of its own (`worker.Worker`), up
to `jobs` at a time; each mutant runs in the worker of the port whose
framework it needs. The parent follows every worker message by message:

- a worker that **dies** (a signal, `os._exit`, a native abort, the kernel's
  out-of-memory killer) marks the property or mutant it was running
  "crashed", naming the signal or exit code, the example, the call and the
  last lines the port printed; the rest of that port's work goes on in a
  fresh worker;
- a worker that makes **no progress** for `timeout` seconds (one example,
  or loading the port) is killed, and the same is reported as "timeout".
  Progress is a message, or CPU time used (or bytes read) by the worker's
  processes: a first compile under load sends no message for minutes but
  computes, and a hang does neither. Computing without a message is allowed up to
  `BUSY_LIMIT` times the timeout (a loop that never ends computes too);
  see `Supervisor.hung`;
- **SIGINT or SIGTERM** (`interrupts.Interrupted`) stops every worker with
  what it started, and the report holds what finished, marked interrupted;
- a crash inside a call of the **canonical port** is the canonical port's:
  the run reports it, and every property that needs the canonical port is
  skipped from then on, with that reason;
- whatever a port prints goes to its own file, shown with its failures.

`in_process=True` runs everything in this process instead, for debugging
(no isolation: a crashing port ends the run).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing import connection
from pathlib import Path
from typing import Any

import implementations

from ..checking.mutation import MutantResult
from ..checking.properties import PROPERTIES, Property
from ..mutants import MUTANTS
from . import environment, expectations, interrupts, isolation, profiles
from .runner import Outcome
from .worker import PortInfo, Session, Settings, Worker, tail

SCHEMA = 3  # the version of the JSON report (`report.to_json`); docs/REPORT.md
OUTPUT_LIMIT = 16384  # characters of a port's captured output kept in the report
# A worker that sends no message but computes (compiling) may go on for this many timeouts.
BUSY_LIMIT = 10
# Computing means: at least this share of one core, over the last half timeout. A process
# asleep (a hang) uses next to none; one compiling on a shared, loaded machine far more.
BUSY_SHARE = 0.02

Progress = Callable[[str, str, Any], None]  # (task, kind, value)


@dataclass(frozen=True)
class RunConfig:
    """Everything a suite run needs; the CLI and the pytest plugin build one.

    **Arguments:**

    - `ports`: the ports to check, by registered name.
    - `profile`: the Hypothesis profile (`profiles.PROFILES`).
    - `max_examples`: examples per property (None: the profile's).
    - `properties`: the property keys to run (empty: all of them).
    - `mutants`: whether to hunt the mutants too.
    - `jobs`: worker processes at a time.
    - `timeout`: seconds one example may take (None: the profile's).
    - `in_process`: run here, without workers (for debugging).
    - `expectations_dir`: read expected failures from `<dir>/<port>.txt`.
    - `canonical`: the reference port.
    - `reproduce`: a Hypothesis blob that replays one failing example.
    """

    ports: tuple[str, ...]
    profile: str = profiles.DEFAULT
    max_examples: int | None = None
    properties: tuple[str, ...] = ()
    mutants: bool = True
    jobs: int = 2
    timeout: float | None = None
    in_process: bool = False
    expectations_dir: Path | None = None
    canonical: str = implementations.CANONICAL
    reproduce: str = ""

    @property
    def scope(self) -> str:
        return "wide" if self.profile == "thorough" else "menu"

    @property
    def example_timeout(self) -> float:
        return self.timeout if self.timeout is not None else profiles.TIMEOUTS[self.profile]

    @property
    def selected(self) -> tuple[Property, ...]:
        keys = set(self.properties)
        return tuple(p for p in PROPERTIES if not keys or p.key in keys)

    def settings(self) -> Settings:
        """What the workers need to know."""
        keeps = self.profile in profiles.KEEPS_EXAMPLES
        return Settings(
            canonical=self.canonical,
            profile=self.profile,
            max_examples=self.max_examples,
            scope=self.scope,
            database=environment.hypothesis_dir() / "examples" if keeps else None,
            reproduce=self.reproduce,
            # The cores shared out among the workers that run at once.
            threads=None if self.in_process else max(1, (os.cpu_count() or 1) // self.jobs),
        )


@dataclass
class PortReport:
    """One port's row: whether it loaded, its versions, an outcome per property, its output.

    `state` is "available", "unavailable", "broken", or "crashed" / "timed
    out" when its worker died or hung while loading it.
    """

    name: str
    state: str = "available"
    reason: str = ""
    framework: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)  # device and matmul precision
    outcomes: list[Outcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    output: str = ""  # what the port printed (the end of it)
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.state not in ("available", "unavailable") or any(
            o.failed for o in self.outcomes
        )


@dataclass
class SuiteReport:
    """Everything a run found, for the table and for `--json`."""

    profile: str
    max_examples: int | None
    scope: str
    canonical: str
    ports: list[PortReport]
    mutants: list[MutantResult] | None
    canonical_failure: str = ""  # set when the canonical port crashed
    timeout: float = 0.0
    seconds: float = 0.0
    interrupted: bool = False  # SIGINT or SIGTERM stopped it: it holds what finished

    @property
    def failed(self) -> bool:
        not_killed = any(m.status not in ("killed", "unavailable") for m in self.mutants or [])
        return bool(self.canonical_failure) or not_killed or any(p.failed for p in self.ports)


def examples_per_property(prop: Property, max_examples: int | None) -> int:
    """How many examples a property will run (for progress totals)."""
    if prop.cases is not None:
        return len(prop.cases())
    if max_examples is not None or prop.examples is not None:
        return prop.capped(max_examples)
    from hypothesis import settings

    return settings().max_examples


# ---------------------------------------------------------------------------
# One port's (or one mutant family's) work, followed from the parent
# ---------------------------------------------------------------------------


@dataclass
class PortRun:
    """One worker's job as the parent follows it: what is left, what came back."""

    port: str | None  # None: mutants only (their family's port is not being checked)
    family: str  # the port whose framework the job loads
    properties: list[str]
    mutants: list[str]
    output: Path
    report: PortReport | None = None
    mutant_results: list[MutantResult] = field(default_factory=list)
    worker: Worker | None = None
    loaded: bool = False
    finished: bool = False
    current: tuple[str, str] | None = None  # (kind, key)
    example: str = ""
    call: tuple[str, str] | None = None
    last_activity: float = 0.0
    work_probe: tuple[float, tuple | None] | None = None  # (when, its `Worker.work()` then)
    busy: bool = False  # it has computed without a message for longer than the timeout
    started: float = 0.0
    seconds: float = 0.0  # wall time, start to finish (restarts included)
    restarts_without_progress: int = 0

    @property
    def task(self) -> str:
        return self.port or "mutants"

    @property
    def remaining(self) -> bool:
        return bool(self.properties or self.mutants)


class Supervisor:
    """Runs `PortRun`s in workers, `jobs` at a time, and turns what happens into reports."""

    def __init__(self, config: RunConfig, runs: list[PortRun], notify: Progress):
        self.config, self.runs, self.notify = config, runs, notify
        self.settings = config.settings()
        self.canonical_failure = ""
        self.keep_workers = False  # True: a finished run's worker stays up for more work
        self.interrupted: int | None = None  # the signal that stopped the run

    # -- messages ------------------------------------------------------------------------

    def handle(self, run: PortRun, message: tuple) -> None:
        kind = message[0]
        run.last_activity, run.work_probe, run.busy = time.monotonic(), None, False
        if kind == "loaded":
            self._loaded(run, message[1])
        elif kind == "begin":
            run.current, run.example, run.call = (message[1], message[2]), "", None
            run.restarts_without_progress = 0
        elif kind == "example":
            run.example, run.call = message[1], None
            if run.current and run.current[0] == "property":
                self.notify(run.task, "advance", 1)
        elif kind == "preparing":
            run.example, run.call = f"the canonical side of {message[1]}", None
        elif kind == "call":
            run.call = (message[1], message[2])
        elif kind == "outcome":
            self._record_outcome(run, message[1])
        elif kind == "mutant":
            self._record_mutant(run, message[1])
        elif kind == "warning":  # every worker meets the same cache: said once
            environment.warn(message[1], once=message[2])
        elif kind == "idle":
            run.current = None
            if not run.remaining:
                run.finished = True

    def _loaded(self, run: PortRun, info: PortInfo) -> None:
        run.loaded = True
        if run.report is not None:
            report = run.report
            report.state, report.reason = info.state, info.reason
            report.framework, report.versions = info.framework, info.versions
            report.environment = info.environment
            if info.state != "available":
                run.properties = []
        if info.state != "available":
            # Mutants of a family whose port cannot load cannot run either.
            for name in run.mutants:
                reason = f"its port {run.family!r} is {info.state}: {info.reason}"
                self._mutant_lost(run, name, "unavailable", reason)
            run.finished = True

    def _record_outcome(self, run: PortRun, outcome: Outcome) -> None:
        run.report.outcomes.append(outcome)
        if outcome.property in run.properties:
            run.properties.remove(outcome.property)
        run.current = None
        self.notify(run.task, "property", outcome.property)

    def _record_mutant(self, run: PortRun, result: MutantResult) -> None:
        run.mutant_results.append(result)
        if result.name in run.mutants:
            run.mutants.remove(result.name)
        run.current = None
        self.notify("mutants", "advance", 1)

    def _mutant_lost(self, run: PortRun, name: str, status: str, message: str) -> None:
        self._record_mutant(run, MutantResult(name, MUTANTS[name].bug, status, message=message))

    # -- deaths and hangs ----------------------------------------------------------------

    def lost(self, run: PortRun, status: str, how: str) -> None:
        """The worker died (`status` "crashed") or was stopped ("timeout"): say where."""
        # faulthandler: ~25 lines for the crashing thread, 3 for the parent watcher
        last_lines = tail(run.output, lines=45)
        printed = f"\nlast lines it printed:\n{_indent(last_lines)}" if last_lines else ""
        if not run.loaded:
            if run.report is not None:
                run.report.state = "crashed" if status == "crashed" else "timed out"
                run.report.reason = f"{how} while loading the port{printed}"
            for name in list(run.mutants):
                message = f"{how} while loading the {run.family} worker{printed}"
                self._mutant_lost(run, name, status, message)
            run.properties, run.finished = [], True
            return
        where = self._where(run)
        in_canonical = run.call is not None and run.call[0] == "canonical"
        if in_canonical and not self.canonical_failure:
            self.canonical_failure = (
                f"the canonical port {self.config.canonical!r} {status} ({how}) in {where}{printed}"
            )
        if run.current is not None:
            kind, key = run.current
            if kind == "property":
                if in_canonical:
                    outcome = Outcome(run.port, key, "skip", message=self.canonical_failure)
                else:
                    message = f"[{run.port}] {status}: {how} in {where}{printed}"
                    outcome = Outcome(run.port, key, status, message=message)
                self._record_outcome(run, outcome)
            else:
                self._mutant_lost(run, key, status, f"[{key}] {status}: {how} in {where}{printed}")
        else:
            run.restarts_without_progress += 1
        if run.restarts_without_progress > 1:  # it dies between items: give the rest up
            for key in list(run.properties):
                message = f"[{run.port}] not run: its worker kept dying ({how})"
                self._record_outcome(run, Outcome(run.port, key, status, message=message))
            for name in list(run.mutants):
                message = f"not run: the {run.family} worker kept dying ({how})"
                self._mutant_lost(run, name, status, message)
        run.finished = not run.remaining

    def _where(self, run: PortRun) -> str:
        parts = []
        if run.call is not None:
            side, method = run.call
            owner = "the canonical port's" if side == "canonical" else "the port's"
            parts.append(f"{owner} {method}")
        if run.current is not None:
            kind, key = run.current
            parts.append(f"{'property' if kind == 'property' else 'mutant'} {key}")
        if run.example:
            parts.append(f"example: {run.example}")
        return ", ".join(parts) or "between properties"

    # -- scheduling ----------------------------------------------------------------------

    def start(self, run: PortRun) -> None:
        """Send the run's work to its worker: the one it holds if alive (loaded), else a new one."""
        reused = run.worker is not None and run.worker.alive
        if not reused:
            run.worker = Worker(run.port, self.settings, run.output)
        run.worker.send(("run", tuple(run.properties), tuple(run.mutants), self.canonical_failure))
        run.loaded, run.current, run.call, run.example = reused, None, None, ""
        run.last_activity, run.work_probe, run.busy = time.monotonic(), None, False
        run.started = run.started or time.monotonic()

    def run(self) -> None:
        """Every job to the end, `jobs` workers at a time."""
        waiting = list(self.runs)
        running: list[PortRun] = []
        timeout = self.config.example_timeout
        try:
            while waiting or running:
                while waiting and len(running) < max(1, self.config.jobs):
                    run = waiting.pop(0)
                    self.start(run)
                    running.append(run)
                handles = [h for run in running for h in run.worker.handles]
                connection.wait(handles, timeout=0.25)
                for run in list(running):
                    for message in run.worker.receive():
                        self.handle(run, message)
                    if not run.finished and not run.worker.alive:
                        for message in run.worker.receive():  # what it said last
                            self.handle(run, message)
                        if not run.finished:
                            self.lost(run, "crashed", run.worker.death())
                    elif not run.finished and (why := self.hung(run, timeout)):
                        run.worker.kill()
                        self.lost(run, "timeout", why)
                    if run.finished or not run.worker.alive:
                        if not (run.finished and self.keep_workers):
                            run.worker.stop()
                        running.remove(run)
                        self._finish(run) if run.finished else waiting.insert(0, run)
        except interrupts.Interrupted as stop:  # what finished is kept; the rest stops now
            self.interrupted = stop.signum
            for run in running:  # what a worker said before the signal came still counts
                for message in run.worker.receive():
                    self.handle(run, message)
        finally:  # only if something above raised: leave no worker behind
            for run in running:
                run.worker.kill()
            if self.interrupted is not None:  # one being started when the signal came
                isolation.kill_all()

    def hung(self, run: PortRun, timeout: float) -> str:
        """Why the run's worker counts as hung ("" while it is not).

        A message is progress. Without one for a second (or half the timeout,
        if that is shorter) the CPU time and the bytes read by the worker's
        process group are noted; at the timeout they are read again. A worker
        that used less than `BUSY_SHARE` of a core and read nothing meanwhile
        is hung (a sleep, a deadlock, a wait that never ends). One that worked
        (a compile: tracing, inductor, the C++ compiler; an import from a cold
        disk) gets another half timeout, judged the same way, and so on, up to
        `BUSY_LIMIT` timeouts in all. (Reading the counters scans /proc: done
        once per quiet spell and per half timeout, not per message.)
        """
        now = time.monotonic()
        quiet = now - run.last_activity
        if quiet < min(1.0, timeout / 2):
            return ""
        if run.work_probe is None:
            run.work_probe = (now, run.worker.work())
            return ""
        since, then = run.work_probe
        if now - since < timeout / 2 or quiet <= timeout:
            return ""
        work = run.worker.work()
        computing = (
            then is not None
            and work is not None
            and (work[0] - then[0] >= BUSY_SHARE * (now - since) or work[1] > then[1])
        )
        if not computing:
            if not run.busy:
                return f"no progress for {timeout:.0f} s"
            return (
                f"no progress for {quiet:.0f} s (its processes worked, "
                f"then used no CPU and read nothing for {now - since:.0f} s)"
            )
        if quiet > BUSY_LIMIT * timeout:
            return (
                f"no progress for {quiet:.0f} s: computing all along without finishing "
                f"(the limit is {BUSY_LIMIT} times the {timeout:.0f} s timeout)"
            )
        run.work_probe, run.busy = (now, work), True
        return ""

    def _finish(self, run: PortRun) -> None:
        run.seconds = time.monotonic() - run.started
        if run.report is not None:
            run.report.output = tail(run.output, lines=10**9, limit=OUTPUT_LIMIT)
            run.report.seconds = run.seconds


def _indent(text: str) -> str:
    return "\n".join(f"  | {line}" for line in text.splitlines())


# ---------------------------------------------------------------------------
# Planning and running
# ---------------------------------------------------------------------------


def plan(config: RunConfig, scratch: Path) -> list[PortRun]:
    """One job per port; each mutant joins the job of its family's port (or one of its own)."""
    keys = [p.key for p in config.selected]
    runs = {
        name: PortRun(name, name, list(keys), [], scratch / f"{name}.out", PortReport(name))
        for name in config.ports
    }
    if config.mutants:
        for spec in MUTANTS.values():
            if spec.family not in runs:
                output = scratch / f"mutants-{spec.family}.out"
                runs[spec.family] = PortRun(None, spec.family, [], [], output)
            runs[spec.family].mutants.append(spec.name)
    # Longest first, so that no long job starts last: as long as the last run
    # took, or, for a job never timed, by its number of mutants.
    took = _durations()
    return sorted(runs.values(), key=lambda run: (-took.get(run.family, 0.0), -len(run.mutants)))


def _durations() -> dict[str, float]:
    """Seconds each job took in the last run on this machine (empty if none was kept)."""
    try:
        return json.loads((environment.cache_root() / "durations.json").read_text())
    except (OSError, ValueError):
        return {}


def _keep_durations(runs: list[PortRun]) -> None:
    took = _durations() | {run.family: run.seconds for run in runs if run.seconds}
    path = environment.cache_root() / "durations.json"
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(took, indent=1))


def run_suite(config: RunConfig, progress: Progress | None = None) -> SuiteReport:
    """Run the suite as configured; never raises for a failing, crashing or hanging port."""
    started = time.perf_counter()
    notify = progress or (lambda task, kind, value: None)
    with tempfile.TemporaryDirectory(prefix="remat-conformance-run-") as scratch:
        runs = plan(config, Path(scratch))
        supervisor = Supervisor(config, runs, notify)
        if config.in_process:
            _run_in_process(supervisor)
        else:
            supervisor.run()
        # From here on a signal is only noted: the report is made and written whole.
        interrupts.stop_raising()
        for run in runs:
            if run.report is not None:
                run.report.output = tail(run.output, lines=10**9, limit=OUTPUT_LIMIT)
        if supervisor.interrupted is None:  # an interrupted run's times say nothing
            _keep_durations(runs)
    reports = [run.report for run in runs if run.report is not None]
    order = {name: i for i, name in enumerate(config.ports)}
    reports.sort(key=lambda report: order[report.name])
    for report in reports:
        _apply_expectations(report, config.expectations_dir)
    mutant_results = None
    if config.mutants:
        by_name = {r.name: r for run in runs for r in run.mutant_results}
        mutant_results = [by_name[name] for name in MUTANTS if name in by_name]
    return SuiteReport(
        profile=config.profile,
        max_examples=config.max_examples,
        scope=config.scope,
        canonical=config.canonical,
        ports=reports,
        mutants=mutant_results,
        canonical_failure=supervisor.canonical_failure,
        timeout=config.example_timeout,
        seconds=time.perf_counter() - started,
        interrupted=supervisor.interrupted is not None or interrupts.received() is not None,
    )


def _apply_expectations(report: PortReport, directory: Path | None) -> None:
    expected = expectations.load(report.name, directory)
    report.outcomes = [expected.apply(outcome) for outcome in report.outcomes]
    report.warnings = expected.warnings


def _run_in_process(supervisor: Supervisor) -> None:
    """Every job here, one after another (a crash ends the run; output still captured)."""
    for run in supervisor.runs:
        run.started = time.monotonic()
        with _captured(run.output):
            emit = lambda message, run=run: supervisor.handle(run, message)  # noqa: E731
            session = Session(run.port, supervisor.settings, emit)
            if session.port is not None or run.port is None:
                session.run(list(run.properties), list(run.mutants), supervisor.canonical_failure)
        supervisor._finish(run)


@contextlib.contextmanager
def _captured(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr to `path` for a while (fd level: native prints too)."""
    saved = [os.dup(1), os.dup(2)]
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        _flush()
        for stream in (1, 2):
            os.dup2(descriptor, stream)
        yield
    finally:
        _flush()
        for stream, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, stream)
            os.close(copy)
        os.close(descriptor)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
