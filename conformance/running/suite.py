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
  `compute_timeout` (by default `BUSY_LIMIT` times the timeout: a loop that never
  ends computes too);
  see `Supervisor.hung`;
- **SIGINT or SIGTERM** (`interrupts.Interrupted`) stops every worker with
  what it started, and the report holds what finished, marked interrupted;
- a crash inside a call of the **canonical port** is the canonical port's:
  the run reports it, and every property that needs the canonical port is
  skipped from then on, with that reason;
- whatever a port prints goes to its own file, shown with its failures.

`in_process=True` runs everything in this process instead, for debugging
(no isolation: a crashing port ends the run).

The parts: `config` (what a run is asked), `supervisor` (the workers, followed
from here), `results` (what it found, and its JSON); this module plans and runs.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
from importlib.metadata import entry_points
from pathlib import Path

import implementations
from implementations import manifests

from .. import outputs
from ..mutants import MUTANTS
from . import environment, expectations, interrupts, profiles, scratch
from .config import BUSY_LIMIT, Progress, RunConfig, examples_per_property
from .results import NOT_RUN, OUTPUT_LIMIT, SCHEMA, PortReport, SuiteReport
from .supervisor import BUSY_SHARE, PortRun, Supervisor, WorkerRun
from .worker import Session, printing_to, tail

__all__ = [
    "BUSY_LIMIT",
    "BUSY_SHARE",
    "SCHEMA",
    "PortReport",
    "PortRun",
    "RunConfig",
    "SuiteReport",
    "Supervisor",
    "WorkerRun",
    "examples_per_property",
    "plan",
    "run_suite",
]


#: The entry-point group in which a port from another package opts in to share its framework's
#: worker: `my_port = "jax"` (its name = the engine whose worker it joins).
SHARED_WORKERS = "remat_conformance.workers"


def worker_group(name: str) -> str:
    """The worker a port runs in: its framework's (its manifest's engine: the ports of one
    framework share a worker, and a Keras port its backend's), or one of its own for a
    sharded port (its ranks and devices are its own) and for a port from another package,
    unless it opts in (`SHARED_WORKERS`)."""
    entry = manifests.port(name)
    if entry is None:
        return _opted_in().get(name, name)
    manifest, port = entry
    return name if port.profile == manifests.SCALE else manifest.engine_of(port)


@functools.cache
def _opted_in() -> dict[str, str]:
    return {point.name: point.value for point in entry_points(group=SHARED_WORKERS)}


def plan(config: RunConfig, scratch: Path) -> list[WorkerRun]:
    """One worker job per framework: each port's work an item of its framework's job, each
    mutant with its family's port (or in an item of its own in that framework's job)."""
    keys = [p.key for p in config.selected]
    # A port is "not run" until its worker says it loaded: an interrupt before then leaves it
    # so, never "available" (which would count it as conforming).
    ports = {
        name: PortRun(
            name, name, list(keys), [], scratch / f"{name}.out", PortReport(name, NOT_RUN)
        )
        for name in config.ports
    }
    if config.mutants:
        for spec in MUTANTS.values():
            if _mutant_left_out(spec.family, config, spec.name):
                continue
            if spec.family not in ports:
                output = scratch / f"mutants-{spec.family}.out"
                ports[spec.family] = PortRun(None, spec.family, [], [], output)
            ports[spec.family].mutants.append(spec.name)
    jobs: dict[str, WorkerRun] = {}
    for run in ports.values():
        group = worker_group(run.family)
        jobs.setdefault(group, WorkerRun(group, [])).items.append(run)
    # Longest first, so that no long job starts last: as long as the last run
    # took, or, for a job never timed, by its number of mutants.
    took = _durations()
    mutants = {group: sum(len(r.mutants) for r in job.items) for group, job in jobs.items()}
    return sorted(jobs.values(), key=lambda job: (-took.get(job.group, 0.0), -mutants[job.group]))


def _mutant_left_out(family: str, config: RunConfig, name: str = "") -> bool:
    """The `scale` profile hunts the sharded ports' mutants only: those of the ports it checks
    (both where it names none). The other profiles hunt every other mutant of the checked
    ports' stacks, and a sharded port's only with that port. A sharded mutant starts ranks of
    its own: a run of torch_fsdp alone starts no JAX process. A suite-wide mutant (no stack
    declares it) is hunted where a checked port shares its family's worker: naming pytorch
    and jax_checkpoint hunts no TensorFlow mutant, and starts no TensorFlow worker."""
    sharded = family in implementations.SHARDED
    if config.profile == profiles.SCALE:
        return not sharded or (bool(config.ports) and family not in config.ports)
    if sharded and family not in config.ports:
        return True
    stack = _declared_by().get(name)
    if stack is None:  # suite-wide: only in a worker the checked ports start anyway
        return worker_group(family) not in {worker_group(port) for port in config.ports}
    return stack not in {_stack_of(port) for port in config.ports}


@functools.cache
def _declared_by() -> dict[str, str]:
    """Each stack-declared mutant's stack, by the mutant's name."""
    return {spec.name: m.stack for m in manifests.manifests() for spec in m.mutants}


def _stack_of(port: str) -> str:
    """A port's stack (a port from another package: its own name)."""
    found = manifests.port(port)
    return found[0].stack if found is not None else port


def _durations() -> dict[str, float]:
    """Seconds each job took in the last run on this machine (empty if none was kept)."""
    try:
        return json.loads((environment.cache_root() / "durations.json").read_text())
    except (OSError, ValueError):
        return {}


def _keep_durations(jobs: list[WorkerRun]) -> None:
    took = _durations() | {job.group: job.seconds for job in jobs if job.seconds}
    path = environment.cache_root() / "durations.json"
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        outputs.write_text(path, json.dumps(took, indent=1))  # a full disk keeps the old


def run_suite(config: RunConfig, progress: Progress | None = None) -> SuiteReport:
    """Run the suite as configured; never raises for a failing, crashing or hanging port."""
    started = time.perf_counter()
    notify = progress or (lambda task, kind, value: None)
    for clash in implementations.name_clashes():
        environment.warn(clash)
    with scratch.run_directory() as directory:
        runs = plan(config, directory)
        supervisor = Supervisor(config, runs, notify)
        if config.in_process:
            _run_in_process(supervisor)
        else:
            supervisor.run()
        # From here on a signal is only noted: the report is made and written whole.
        interrupts.stop_raising()
        items = [run for job in runs for run in job.items]
        for run in items:
            if run.report is not None:
                run.report.output = tail(run.output, lines=10**9, limit=OUTPUT_LIMIT)
        if supervisor.interrupted is None:  # an interrupted run's times say nothing
            _keep_durations(runs)
    interrupted = supervisor.interrupted is not None or interrupts.received() is not None
    for run in items:  # what an interrupt left undone: said, never taken for a pass
        if run.report is not None:
            run.report.not_run = list(run.properties)
            if run.report.state == NOT_RUN:
                run.report.reason = "the run was interrupted before this port loaded"
    reports = [run.report for run in items if run.report is not None]
    order = {name: i for i, name in enumerate(config.ports)}
    reports.sort(key=lambda report: order[report.name])
    for report in reports:
        _apply_expectations(report, config.expectations_dir)
    mutant_results, mutants_not_run = None, []
    if config.mutants:
        by_name = {r.name: r for run in items for r in run.mutant_results}
        mutant_results = [by_name[name] for name in MUTANTS if name in by_name]
        mutants_not_run = [name for run in items for name in run.mutants]
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
        interrupted=interrupted,
        mutants_not_run=mutants_not_run,
    )


def _apply_expectations(report: PortReport, directory: Path | None) -> None:
    expected = expectations.load(report.name, directory)
    report.outcomes = [expected.apply(outcome) for outcome in report.outcomes]
    report.warnings = [*report.warnings, *expected.warnings]


def _run_in_process(supervisor: Supervisor) -> None:
    """Every job here, one after another (a crash ends the run; output still captured)."""
    shared: dict = {}
    try:
        _run_jobs_here(supervisor, shared)
    finally:
        if shared.get("clean") is not None:  # the canonical's clean process (`clean`)
            shared["clean"].close()


def _run_jobs_here(supervisor: Supervisor, shared: dict) -> None:
    for job in supervisor.runs:
        for run in job.items:
            shared.setdefault("clean output", run.output.with_name("clean-canonical.out"))
            run.started = time.monotonic()
            with printing_to(run.output):
                emit = lambda message, run=run: supervisor.handle(run, message)  # noqa: E731
                try:
                    session = Session(run.port, supervisor.settings, emit, shared)
                    if session.port is not None or run.port is None:
                        failure = supervisor.canonical_failure
                        session.run(list(run.properties), list(run.mutants), failure)
                except scratch.DiskFull as full:  # the run's error, as a worker says it
                    message = scratch.full_disk_message(run.output, full.error)
                    raise scratch.RunError(message) from full.error
                except scratch.RunFault as fault:  # likewise (a directory gone, a replay)
                    raise scratch.RunError(str(fault)) from None
                emit(("idle",))
            supervisor._finish(run)
