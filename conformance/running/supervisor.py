"""The parent's side of a run: each `PortRun` in a worker process, followed message by message.

`Supervisor` starts up to `jobs` workers at a time, turns their messages into
outcomes, and tells a death or a hang from a slow compile (see `suite`'s
docstring for what a run reports in each case, and `Supervisor.hung`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from multiprocessing import connection
from pathlib import Path

from ..checking.mutation import MutantResult
from ..mutants import MUTANTS
from . import environment, interrupts, isolation
from .config import Progress, RunConfig
from .results import OUTPUT_LIMIT, PortReport
from .runner import Outcome
from .worker import PortInfo, Worker, tail

# A worker that sends no message but computes (compiling) may go on for this many timeouts.
BUSY_LIMIT = 10
# Computing means: at least this share of one core, over the last half timeout. A process
# asleep (a hang) uses next to none; one compiling on a shared, loaded machine far more.
BUSY_SHARE = 0.02


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
