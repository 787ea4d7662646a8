"""The sweep: each version set installed in its venv, the suite run there, its policies and
documented degradations probed, and every result gathered as one matrix (`Sweep`).

For each set, in version order: `venvs.ready` (reused, or made and installed; a set pip
cannot install is a row that says why; the next set's install runs in a thread while this
set runs), then `python -m conformance run --json` in the venv
on the extra's ports (its own cache), then, unless turned off, `probe policies` once per
framework process (the canonical's first: it writes the references the others read) and
`probe degradation` for each documented degradation of those ports' stacks. A set that is
not run (a named-only distribution, `plan`) says why and installs nothing. The `installed`
set takes the same steps with the running interpreter in place of a venv (`venvs.ready`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from implementations import manifests

from ..checking import policy_expectations
from ..merge.read import Source
from ..running import interrupts
from ..running.runner import FAILING
from . import project, venvs
from .plan import Plan, VersionSet

SCHEMA = 1  # of the sweep's JSON (`summary.to_json`); docs/VERSIONS.md
PROBE_TIMEOUT = 900.0  # seconds for one probe process
POLICIES = ("none", "full", "save_dots", "save_named", "offload_dots", "budget")

#: progress(set number from 1, sets, the set's title, what it does now)
Progress = Callable[[int, int, str, str], None]


@dataclass
class Options:
    """What each venv's suite run takes (`run`'s flags), and what the sweep does besides."""

    profile: str = "ci"
    examples: int | None = None
    properties: tuple[str, ...] = ()
    mutants: bool = True
    timeout: float | None = None
    jobs: int | None = None
    policies: bool = True  # probe the policy cells and the degradations
    remove: bool = False  # remove each venv once its set is done
    reports: Path | None = None  # copy each set's run report there


@dataclass
class SetResult:
    """One version set's outcome. `state`: `ran`, `not run` (a named-only distribution),
    `not installed` (pip could not: `reason` says why), `no report` (the suite did not
    report: `reason`)."""

    vset: VersionSet
    state: str = "pending"
    reason: str = ""
    venv: str = ""
    reused: bool = False
    released: dict[str, str] = field(default_factory=dict)
    packages: dict[str, str] = field(default_factory=dict)
    install_seconds: float = 0.0
    run_seconds: float = 0.0
    probe_seconds: float = 0.0
    exit_code: int | None = None
    report: dict[str, Any] | None = None
    report_path: str = ""
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)  # port -> its cells
    degradations: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> result

    @property
    def failed(self) -> bool:
        """Not installed, no report, a failing outcome or port, or a policy cell that fails."""
        if self.state in ("not installed", "no report"):
            return True
        if self.state != "ran" or self.report is None:
            return False
        if Source(0, self.report_path, self.report).failed:
            return True
        return any(p.get("failed") or p.get("error") for p in self.policies.values())


def degradation_key(degradation: Any) -> str:
    return f"{degradation.family}:{degradation.policy}"


def degradations_of(ports: list[str]) -> list[Any]:
    """The documented degradations of the ports' instrument families and stacks, probed."""
    families = project.families(ports)
    return [d for d in policy_expectations.all_degradations() if d.family in families and d.probe]


@dataclass
class Sweep:
    """Everything a sweep found (`summary.to_json` gives it as data: docs/VERSIONS.md)."""

    plan: Plan
    options: Options
    results: list[SetResult]
    degradations: list[Any]
    seconds: float = 0.0
    interrupted: bool = False

    @property
    def failed(self) -> bool:
        return any(result.failed for result in self.results)


def run(plan: Plan, options: Options, progress: Progress | None = None) -> Sweep:
    """Sweep `plan` (its sets resolved: `plan.resolve`); see the module docstring."""
    say_at = progress or (lambda *args: None)
    start = time.monotonic()
    sweep = Sweep(plan, options, [], degradations_of(plan.ports))
    total = len(plan.sets)

    def teller(number: int, vset: VersionSet) -> Callable[[str], None]:
        return lambda text: say_at(number, total, vset.title, text)

    ahead = _Ahead(plan, options, teller)
    try:
        for number, vset in enumerate(plan.sets, start=1):
            say = teller(number, vset)
            result = SetResult(vset)
            sweep.results.append(result)
            _one(plan, options, result, sweep.degradations, say, ahead)
            say(f"done: {result.state}")
    except interrupts.Interrupted:
        sweep.interrupted = True
    finally:
        ahead.cancel()
    sweep.seconds = time.monotonic() - start
    return sweep


class _Ahead:
    """The next set's venv, installed in a thread while this set runs: pip is mostly waiting
    on the network and the disk, the suite on the CPU. One set ahead at most."""

    def __init__(self, plan: Plan, options: Options, teller: Callable[[int, VersionSet], Any]):
        self.plan, self.options, self.teller = plan, options, teller
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="versions-install")
        self.futures: dict[int, Future] = {}

    def start_after(self, vset: VersionSet) -> None:
        """Start installing the set after `vset`, if there is one to install."""
        number = next(i for i, found in enumerate(self.plan.sets, 1) if found is vset)
        if number >= len(self.plan.sets):
            return
        following = self.plan.sets[number]
        if not following.skip and id(following) not in self.futures:
            say = self.teller(number + 1, following)
            self.futures[id(following)] = self.pool.submit(venvs.ready, self.plan, following, say)

    def take(self, vset: VersionSet, say) -> venvs.Venv:
        """The set's venv: the one installed ahead (its error raised here), or made now."""
        future = self.futures.get(id(vset))
        if future is None:
            return venvs.ready(self.plan, vset, say)
        while True:  # a timeout, so that a signal reaches this (the main) thread
            try:
                venv = future.result(timeout=1.0)
            except FutureTimeout:
                continue
            except venvs.InstallFailed:
                del self.futures[id(vset)]
                raise
            del self.futures[id(vset)]  # interrupted before this, `cancel` removes it
            return venv

    def cancel(self) -> None:
        """Stop an install still running (an interrupted sweep), and remove what it made
        where the sweep removes its venvs."""
        if any(not f.done() for f in self.futures.values()):
            venvs.stop_installs()
        self.pool.shutdown(wait=True, cancel_futures=True)
        for future in self.futures.values():
            if future.cancelled() or future.exception() is not None:
                continue
            if self.options.remove:
                venvs.remove(future.result().path)
        self.futures.clear()


def _one(
    plan: Plan, options: Options, result: SetResult, degradations: list[Any], say, ahead: _Ahead
) -> None:
    vset = result.vset
    if vset.skip:
        result.state, result.reason = "not run", vset.skip
        ahead.start_after(vset)
        return
    # Held from taking the venv to removing it: another sweep's run of the same set waits.
    with venvs.locked(venvs.path_of(plan, vset), "use", say):
        _run_set(plan, options, result, degradations, say, ahead)


def _run_set(
    plan: Plan, options: Options, result: SetResult, degradations: list[Any], say, ahead: _Ahead
) -> None:
    vset = result.vset
    try:
        venv = ahead.take(vset, say)
        if not venv.python.exists():  # removed by another sweep (--remove) while this one waited
            venv = venvs.ready(plan, vset, say)
    except venvs.InstallFailed as error:
        result.state, result.reason = "not installed", str(error)
        ahead.start_after(vset)
        return
    ahead.start_after(vset)  # installed while this set runs
    result.venv, result.reused = str(venv.environment), venv.reused
    result.released, result.packages = venv.released, venv.packages
    result.install_seconds = venv.seconds
    try:
        source = venvs.snapshot(venv.path)
        env = venvs.run_environment(venv, source)
        started = time.monotonic()
        _suite(plan, options, result, venv, env, say)
        result.run_seconds = time.monotonic() - started
        if options.policies and result.state == "ran":
            started = time.monotonic()
            _policies(plan, result, venv, env, say)
            _degradations(degradations, result, venv, env, say)
            result.probe_seconds = time.monotonic() - started
        if options.reports is not None and result.report is not None:
            options.reports.mkdir(parents=True, exist_ok=True)
            copy = options.reports / f"{plan.extra}-{vset.slug}.json"
            shutil.copyfile(result.report_path, copy)
            result.report_path = str(copy)
    finally:
        if options.remove:
            say("removing its folder" if venv.interpreter else "removing its venv")
            venvs.remove(venv.path)


def _watch(command: list[str], env: dict[str, str], say, what: str, timeout: float | None,
           **kwargs: Any) -> int:  # fmt: skip
    """Run a child to its end, saying how long it has run; stopped on an interrupt or past
    `timeout` (then -9)."""
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, **kwargs)
    started = time.monotonic()
    try:
        while True:
            try:
                return process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - started
                if timeout is not None and elapsed > timeout:
                    process.kill()
                    process.wait()
                    return -9
                say(f"{what} · {elapsed:.0f} s")
    except BaseException:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise


def suite_command(plan: Plan, options: Options, python: Path) -> list[str]:
    """The `run --json` a venv runs."""
    command = [str(python), "-m", "conformance", "run", "--json", "--profile", options.profile]
    for name in plan.ports:
        command += ["--implementation", name]
    for key in options.properties:
        command += ["--property", key]
    if options.examples is not None:
        command += ["--examples", str(options.examples)]
    if not options.mutants:
        command.append("--no-mutants")
    if options.timeout is not None:
        command += ["--timeout", str(options.timeout)]
    if options.jobs is not None:
        command += ["--jobs", str(options.jobs)]
    return command


def _suite(plan, options, result: SetResult, venv, env, say) -> None:
    report, errors = venv.path / "run.json", venv.path / "run.err"
    command = suite_command(plan, options, venv.python)
    what = "running the suite on " + ", ".join(plan.ports)
    with open(report, "w", encoding="utf-8") as out, open(errors, "w", encoding="utf-8") as err:
        code = _watch(command, env, say, what, None, stdout=out, stderr=err, cwd=venv.path)
    result.exit_code, result.report_path = code, str(report)
    try:
        result.report = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tail = errors.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        result.state = "no report"
        result.reason = f"the suite exited {code} with no report: " + " / ".join(tail)
        return
    result.state = "ran"


def _policies(plan: Plan, result: SetResult, venv, env, say) -> None:
    """The policy cells, one process per framework (lane), the canonical's first."""
    lanes: dict[str, list[str]] = {manifests.lane_of(manifests.CANONICAL_PORT): []}
    for name in plan.ports:
        lanes.setdefault(manifests.lane_of(name), []).append(name)
    references = venv.path / "references.npz"
    references.unlink(missing_ok=True)
    for index, (lane, ports) in enumerate(lanes.items()):
        out = venv.path / f"policies-{lane}.json"
        command = [str(venv.python), "-m", "conformance.versions.probe", "policies",
                   "--references", str(references), "--out", str(out)]  # fmt: skip
        command += ["--canonical"] if index == 0 else []
        for name in ports:
            command += ["--port", name]
        found = _probe(command, env, say, f"policies ({lane})", out, venv.path)
        for name in ports:
            result.policies[name] = (
                {"error": found["error"]} if "error" in found else found["ports"].get(name, {})
            )


def _degradations(degradations: list[Any], result: SetResult, venv, env, say) -> None:
    for index, degradation in enumerate(degradations):
        out = venv.path / f"degradation-{index}.json"
        command = [str(venv.python), "-m", "conformance.versions.probe", "degradation",
                   "--probe", degradation.probe, "--out", str(out)]  # fmt: skip
        what = f"degradation {degradation.family} {degradation.policy}"
        result.degradations[degradation_key(degradation)] = _probe(
            command, env, say, what, out, venv.path
        )


def _probe(command: list[str], env, say, what: str, out: Path, cwd: Path) -> dict[str, Any]:
    out.unlink(missing_ok=True)
    log = out.with_suffix(".err")
    with open(log, "w", encoding="utf-8") as err:
        code = _watch(command, env, say, what, PROBE_TIMEOUT, stdout=err, stderr=err, cwd=cwd)
    try:
        return json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        return {"error": f"the probe exited {code}: " + " / ".join(tail)}


def failing(status: str) -> bool:
    return status in FAILING
