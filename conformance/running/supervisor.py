"""The parent's side of a run: each `WorkerRun` in a worker process, followed message by message.

A `WorkerRun` is one worker's job: the `PortRun`s of one framework (its
ports, then the mutants it hunts), sent to the worker one request at a time.
`Supervisor` starts up to `jobs` workers at a time, turns their messages into
outcomes, and tells a death or a hang from a slow compile (see `suite`'s
docstring for what a run reports in each case, and `Supervisor.hung`). A
worker that dies, hangs, or reports that a port changed process-wide state
(`process_state`) is replaced by a fresh one for the rest of its job.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from multiprocessing import connection
from pathlib import Path

import implementations

from ..checking.properties import h_hygiene
from ..mutants import MUTANTS
from . import environment, interrupts, isolation, scratch
from .config import Patience, Progress, RunConfig
from .mutation import MutantResult
from .results import OUTPUT_LIMIT, PortReport
from .runner import Outcome
from .worker import PortInfo, Worker, tail

#: The property a change to the process state fails ((h): the port's own hygiene).
HYGIENE = h_hygiene.PROPERTY.key

# Computing means: at least this share of one core, over the last half timeout. A process
# asleep (a hang) uses next to none; one compiling on a shared, loaded machine far more.
BUSY_SHARE = 0.02
# A quiet worker is given this long past the timeout before it counts as hung: a process
# port's adapter watches each request with the same timeout, from inside the call, and names
# the request it stopped (`implementations.process`). It starts its clock once the program
# is up and the request sent, after this one's: without the grace, which watch spoke first
# was a race (a sleeping C++ port read "no progress" instead of "no answer to 'forward'").
WATCH_GRACE = 2.0


@dataclass
class PortRun:
    """One port's work (or one family's mutants) in a worker, as the parent follows it: what
    is left, what came back. `output`: the file its prints go to."""

    port: str | None  # None: mutants only (their family's port is not being checked)
    family: str  # the port whose framework the job loads
    properties: list[str]
    mutants: list[str]
    output: Path
    report: PortReport | None = None
    mutant_results: list[MutantResult] = field(default_factory=list)
    worker: Worker | None = None  # the worker it runs in (its `WorkerRun`'s)
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
    state_changed: str = ""  # what it changed of the worker's process-wide state, if anything
    state_changed_by_port: bool = False  # by the port itself (not a mutant hunted after it)

    @property
    def task(self) -> str:
        return self.port or "mutants"

    @property
    def remaining(self) -> bool:
        return bool(self.properties or self.mutants)


@dataclass
class WorkerRun:
    """One worker's job: its `items` (`PortRun`s) in order, one request at a time.

    `group` names the job (its framework, `suite.worker_group`); `fresh` is set when the
    worker must be replaced before the next request (a port changed process-wide state).
    """

    group: str
    items: list[PortRun]
    worker: Worker | None = None
    fresh: bool = False
    started: float = 0.0
    seconds: float = 0.0  # wall time, start to finish (restarts included)

    @property
    def active(self) -> PortRun | None:
        """The item the worker is on (or gets next); None when every item is done."""
        return next((item for item in self.items if not item.finished), None)

    @property
    def finished(self) -> bool:
        return self.active is None


class Supervisor:
    """Runs `WorkerRun`s in workers, `jobs` at a time, and turns what happens into reports."""

    def __init__(self, config: RunConfig, runs: list[WorkerRun], notify: Progress):
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
        elif kind == "waiting":  # on the cache's lock (`locks`): the port is not judged
            run.example, run.call = message[1], None
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
        elif kind == "state":  # it changed process-wide state: the next request gets a fresh worker
            run.state_changed = message[1]
            if run.report is not None:
                run.report.warnings.append(message[1])
                # A change of a port from another package (not a mutant's hunted after it)
                # fails its (h). A built-in port's is its stack's known need, said (the sharded
                # JAX port sets XLA_FLAGS for its host devices, in a worker of its own).
                run.state_changed_by_port = (
                    message[2:] == (run.port,) and run.port not in implementations.BUILTIN
                )
        elif kind == "fatal":  # the machine's, not the port's: the run ends, exit 2
            raise scratch.RunError(message[1])
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
            for name in list(run.mutants):  # each is removed from the list as it is recorded
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
        """The worker died (`status` "crashed") or was stopped ("timeout"): say where. A
        working or temporary directory gone meanwhile is the run's error, not the port's."""
        if fault := scratch.environment_fault():
            raise scratch.RunError(fault)
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

    def start(self, job: WorkerRun) -> None:
        """Send the job's next item to its worker: the one it holds while alive and clean, else
        a new one."""
        run = job.active
        if job.worker is not None and job.fresh:
            job.worker.stop()  # a port changed process-wide state: no other port meets it
        if job.worker is None or job.fresh or not job.worker.alive:
            job.worker, job.fresh = Worker(self.settings, run.output), False
        run.worker = job.worker
        request = (run.port, tuple(run.properties), tuple(run.mutants), self.canonical_failure)
        job.worker.send(("run", *request, str(run.output)))
        run.loaded, run.current, run.call, run.example = False, None, None, ""
        run.last_activity, run.work_probe, run.busy = time.monotonic(), None, False
        run.started = run.started or time.monotonic()
        job.started = job.started or time.monotonic()

    def run(self) -> None:
        """Every job to the end, `jobs` workers at a time."""
        waiting = [job for job in self.runs if not job.finished]
        running: list[WorkerRun] = []
        example, loading = self.config.example_patience, self.config.load_patience
        try:
            while waiting or running:
                while waiting and len(running) < max(1, self.config.jobs):
                    job = waiting.pop(0)
                    self.start(job)
                    running.append(job)
                handles = [h for job in running for h in job.worker.handles]
                connection.wait(handles, timeout=0.25)
                for job in list(running):
                    self._follow(job, example, loading)
                    if job.finished:
                        if not self.keep_workers or job.fresh:
                            job.worker.stop()
                        job.seconds = time.monotonic() - job.started
                        running.remove(job)
        except interrupts.Interrupted as stop:  # what finished is kept; the rest stops now
            self.interrupted = stop.signum
            for job in running:  # what a worker said before the signal came still counts
                if job.active is not None:
                    for message in job.worker.receive():
                        self.handle(job.active, message)
        finally:  # only if something above raised: leave no worker behind
            for job in running:
                if job.worker is not None:
                    job.worker.kill()
            if self.interrupted is not None:  # one being started when the signal came
                isolation.kill_all()

    def _follow(self, job: WorkerRun, example: Patience, loading: Patience) -> None:
        """Read what the job's worker said; on a finished item, a death or a hang, go on with
        the rest of the job (in a fresh worker where it died, hung or was left unclean)."""
        run = job.active
        for message in job.worker.receive():
            self.handle(run, message)
        if not run.finished and not job.worker.alive:
            for message in job.worker.receive():  # what it said last
                self.handle(run, message)
            if not run.finished:
                self.lost(run, "crashed", job.worker.death())
        elif not run.finished and (why := self.hung(run, example if run.loaded else loading)):
            job.worker.kill()
            self.lost(run, "timeout", why)
        if run.finished:
            self._finish(run)
            job.fresh = job.fresh or bool(run.state_changed)
        if not job.finished and (run.finished or not job.worker.alive):
            self.start(job)  # the next item, or the rest of this one

    def hung(self, run: PortRun, patience: Patience) -> str:
        """Why the run's worker counts as hung ("" while it is not).

        A message is progress. Without one for a second (or half the timeout,
        if that is shorter) the CPU time and the bytes read by the worker's
        process group are noted; at the timeout (and `WATCH_GRACE`) they are read again. A worker
        that used less than `BUSY_SHARE` of a core and read nothing meanwhile
        is hung (a sleep, a deadlock, a wait that never ends). One that worked
        (a compile: tracing, inductor, the C++ compiler; an import from a cold
        disk) gets another half timeout, judged the same way, and so on, up to
        `patience.computing` seconds in all. (Reading the counters scans /proc: done
        once per quiet spell and per half timeout, not per message.)
        """
        now = time.monotonic()
        quiet, timeout = now - run.last_activity, patience.quiet
        if quiet < min(1.0, timeout / 2):
            return ""
        if run.work_probe is None:
            run.work_probe = (now, run.worker.work())
            return ""
        since, then = run.work_probe
        if now - since < timeout / 2 or quiet <= timeout + WATCH_GRACE:
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
        if quiet > patience.computing:
            return (
                f"no progress for {quiet:.0f} s: computing all along without finishing "
                f"(the limit is {patience.computing:g} s: {patience.source})"
            )
        run.work_probe, run.busy = (now, work), True
        return ""

    def _finish(self, run: PortRun) -> None:
        """An item is done: its wall time and what it printed go into its report; a change an
        outside port made to process-wide state fails its (h), the property of side effects."""
        run.seconds = time.monotonic() - run.started
        if run.report is not None:
            run.report.output = tail(run.output, lines=10**9, limit=OUTPUT_LIMIT)
            run.report.seconds = run.seconds
            if run.state_changed_by_port:
                _fail_hygiene(run.report, run.state_changed)


def _fail_hygiene(report: PortReport, change: str) -> None:
    """Turn the port's passing (h) into a failure naming what it changed (a port whose (h)
    did not run keeps the change as its report's warning)."""
    for outcome in report.outcomes:
        if outcome.property == HYGIENE and not outcome.failed:
            said = change.removeprefix(f"{report.name} ")
            outcome.status, outcome.message = "fail", f"[{report.name}] {said}"


def _indent(text: str) -> str:
    return "\n".join(f"  | {line}" for line in text.splitlines())
