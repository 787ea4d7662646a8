"""The suite as a pytest plugin: every property, parametrized by port name, and the mutants.

Enable it in a conftest.py with `pytest_plugins = ["conformance.pytest_plugin"]`
and collect the tests by importing them into a test module:

    from conformance.pytest_plugin import test_property  # noqa: F401
    from conformance.pytest_plugin import test_mutant  # noqa: F401 (optional)

Test ids read `test_property[pytorch-c_vjp]`, so `-k torch` or `-k vjp`
select ports and properties. `test_mutant[torch_no_checkpoint]` checks that the
suite rejects a mutant of a checked port's family with the property aimed at its
bug (the suite's check of itself, as the CLI's mutation run). Options:
`--port NAME` (repeatable) limits the ports (and so the mutants);
`--expectations DIR` reads expected failures from `DIR/<port>.txt`;
`--conformance-timeout SECONDS` is the longest one example may take;
`--conformance-in-process` runs the ports in the test process (debugging).

**Isolation, as in the CLI.** Each port is checked in its framework's worker
process (`conformance.running.worker`), kept for the session: a port that
crashes or hangs fails its own test (naming the signal, the example and what it
printed) and nothing else, and Keras backends never share a process. A mutant is
hunted in its family's worker, as a run hunts it. Under pytest-xdist with
`--dist loadscope` (this project's config), every test of one framework's worker
(its ports' and its mutants') goes to the same xdist worker, so each framework
is loaded once; other tests are grouped by module (a class with its module).
(`--dist loadgroup` and `xdist_group` marks would do it too, but pytest 9.2
broke them: pytest-dev/pytest-xdist#1386.)
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from .checking.properties import PROPERTIES
from .commands import arguments
from .mutants import MUTANTS
from .running import environment, expectations
from .running.config import RunConfig, run_config
from .running.mutation import MutantResult
from .running.suite import PortReport, PortRun, Supervisor, WorkerRun, worker_group
from .running.worker import Session, printing_to, tail


class StaleExpectationWarning(UserWarning):
    """An expected failure that no longer fails, or names no property: remove the entry."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("remat-conformance")
    group.addoption(
        "--port",
        action="append",
        default=None,
        metavar="NAME",
        help="check only this port (repeatable)",
    )
    group.addoption("--expectations", default=None, metavar="DIR",
                    help="read expected failures from DIR/<port>.txt")  # fmt: skip
    group.addoption(
        "--conformance-timeout",
        default=None,
        metavar="SECONDS",
        help="the longest one example may take (default: the profile's)",
    )
    group.addoption(
        "--conformance-examples",
        default=None,
        metavar="N",
        help="examples per property (default: the profile's)",
    )
    group.addoption(
        "--conformance-in-process",
        action="store_true",
        help="check the ports in the test process: no isolation (for debugging)",
    )


# Each option, and the check `conformance.commands.arguments` makes of it, as the CLI does.
_CHECKS = {
    "--port": arguments.port_name,
    "--expectations": arguments.existing_directory,
    "--conformance-timeout": arguments.positive_seconds,
    "--conformance-examples": arguments.positive_int,
}


def pytest_configure(config: pytest.Config) -> None:
    check_options(config)
    environment.prepare()


def check_options(config: pytest.Config) -> None:
    """Every option of the plugin and `$REMAT_PROFILE`, checked before any test runs.

    Each checked value replaces the option's (a number, a Path); a bad one is a
    `pytest.UsageError` naming the option, in one line.
    """
    try:
        for flag, kind in _CHECKS.items():
            dest = flag.lstrip("-").replace("-", "_")
            given = config.getoption(dest)
            if given is None:
                continue
            if isinstance(given, list):
                checked = [arguments.check(kind, value, flag) for value in given]
            else:
                checked = arguments.check(kind, given, flag)
            setattr(config.option, dest, checked)
        arguments.profile_from_environment(None)
    except arguments.UsageError as error:
        raise pytest.UsageError(str(error)) from None


# `test_property[<port>-<property key>]` and `test_mutant[<mutant>]`, as
# pytest_generate_tests names them.
_PORT_TEST = re.compile(r"::test_property\[(?P<port>.+)-[a-z]_\w+\]$")
_MUTANT_TEST = re.compile(r"::test_mutant\[(?P<mutant>\w+)\]$")


def worker_scope(nodeid: str) -> str | None:
    """A conformance test's xdist scope: the worker of its port or of its mutant's family
    (the framework's), or None for any other test."""
    if found := _PORT_TEST.search(nodeid):
        return f"worker {worker_group(found['port'])}"
    if (found := _MUTANT_TEST.search(nodeid)) and found["mutant"] in MUTANTS:
        return f"worker {worker_group(MUTANTS[found['mutant']].family)}"
    return None


def xdist_scope(nodeid: str) -> str:
    """The xdist scope of any test: its port's worker's (`worker_scope`), else its module.

    loadscope's own split makes a class a scope apart from its module's functions, so a
    module-scoped fixture they share was made once for each (a two-node run, 10 s, twice)."""
    return worker_scope(nodeid) or nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under `--dist loadscope`, the tests of the ports that share a worker (a framework's)
    are one scope: one xdist worker starts that worker, once. Any other test's scope is its
    module."""
    if config.getoption("dist") != "loadscope":
        return None
    return port_scopes(config, log)


def port_scopes(config: pytest.Config, log, first: Callable[[str], bool] = lambda _: False):
    """loadscope's scheduler on `xdist_scope`'s scopes, handing out the ports' worker scopes
    first, then the scopes `first` names, then the rest (each group in xdist's own order: the
    most tests first). Long grains go first and short ones fill the end, so that no xdist
    worker is left with a framework's worker to start while the other has nothing to do."""
    from xdist.scheduler import LoadScopeScheduling

    class PortScopes(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the queue is whole by the first hand-out
                self.ordered = True
                queue = sorted(self.workqueue.items(), key=lambda item: _rank(item[0]))
                self.workqueue.clear()
                self.workqueue.update(queue)
            super()._assign_work_unit(node)

    def _rank(scope: str) -> int:
        return 0 if scope.startswith("worker ") else 1 if first(scope) else 2

    return PortScopes(config, log)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "port_name" in metafunc.fixturenames:
        metafunc.parametrize("port_name", checked_ports(metafunc.config))
    if "mutant_name" in metafunc.fixturenames:
        metafunc.parametrize("mutant_name", hunted_mutants(checked_ports(metafunc.config)))
    if "conformance_property" in metafunc.fixturenames:
        metafunc.parametrize("conformance_property", PROPERTIES, ids=[p.key for p in PROPERTIES])


def session_config(config: pytest.Config) -> RunConfig:
    """The session's run, by `run_config`, as the CLI's and the API's: the ports `--port`
    names (else the profile's), the profile `$REMAT_PROFILE` names (else the default)."""
    directory = config.getoption("expectations")
    return run_config(
        config.getoption("port"),
        examples=config.getoption("conformance_examples"),
        # One port worker runs at a time per xdist worker: share the cores among those.
        jobs=int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")),
        timeout=config.getoption("conformance_timeout"),
        in_process=config.getoption("conformance_in_process"),
        expectations_dir=Path(directory) if directory else None,
    )


def checked_ports(config: pytest.Config) -> list[str]:
    """The ports the session checks (`session_config`)."""
    return list(session_config(config).ports)


def hunted_mutants(ports: list[str]) -> list[str]:
    """The mutants whose family is among `ports`: each runs in a worker the ports start anyway."""
    return [name for name, spec in MUTANTS.items() if spec.family in ports]


class ConformanceSession:
    """The ports' worker processes for a test session (one per framework, as a run has), and
    what they found so far."""

    def __init__(self, config: RunConfig):
        self.config = config
        self.supervisor = Supervisor(config, [], lambda task, kind, value: None)
        self.supervisor.keep_workers = True
        self._scratch = tempfile.TemporaryDirectory(prefix="remat-conformance-pytest-")
        self.jobs: dict[str, WorkerRun] = {}  # by worker group, their workers kept
        self.reports: dict[str, PortReport] = {}
        self.sessions: dict[str, Session] = {}  # in-process only
        self.shared: dict = {}  # in-process only: what the sessions share

    def check(self, name: str, key: str) -> tuple[PortReport, PortRun]:
        """Run one property on one port; the port's report (load state) and the run."""
        report = self.reports.get(name) or PortReport(name)
        output = Path(self._scratch.name) / f"{name}.out"
        run = PortRun(name, name, [key], [], output, report)
        self._run(run)
        self.reports[name] = report
        return report, run

    def hunt(self, mutant: str) -> tuple[MutantResult, PortRun]:
        """Hunt one mutant in its family's worker; its result and the run."""
        family = MUTANTS[mutant].family
        output = Path(self._scratch.name) / f"mutants-{family}.out"
        run = PortRun(None, family, [], [mutant], output)
        self._run(run)
        (result,) = run.mutant_results
        return result, run

    def _run(self, run: PortRun) -> None:
        if self.config.in_process:
            self._in_process(run)
            return
        group = worker_group(run.family)
        job = self.jobs.get(group) or WorkerRun(group, [])
        job.items = [run]
        self.supervisor.runs = [job]
        self.supervisor.run()
        self.jobs[group] = job

    def _in_process(self, run: PortRun) -> None:
        def emit(message) -> None:
            self.supervisor.handle(run, message)

        with printing_to(run.output):
            session = self.sessions.get(run.port)
            if session is None:
                session = Session(run.port, self.config.settings(), emit, self.shared)
                self.sessions[run.port] = session
            else:
                session.emit, run.loaded = emit, True
            if session.port is not None or run.port is None:
                session.run(run.properties, run.mutants, self.supervisor.canonical_failure)
            emit(("idle",))

    def close(self) -> None:
        for job in self.jobs.values():
            if job.worker is not None:
                job.worker.stop()
        self._scratch.cleanup()


@pytest.fixture(scope="session")
def conformance_session(request: pytest.FixtureRequest):
    """The ports' workers, shared by every conformance test of the session."""
    session = ConformanceSession(session_config(request.config))
    yield session
    session.close()


@pytest.fixture(scope="session")
def port_expectations(request: pytest.FixtureRequest):
    """Expected failures by port, read once per session; warns about stale entries."""
    directory = request.config.getoption("expectations")
    cache: dict[str, expectations.Expectations] = {}

    def get(name: str) -> expectations.Expectations:
        if name not in cache:
            cache[name] = expectations.load(name, Path(directory) if directory else None)
            for warning in cache[name].warnings:
                warnings.warn(warning, StaleExpectationWarning, stacklevel=1)
        return cache[name]

    return get


def test_property(port_name, conformance_property, conformance_session, port_expectations):
    """One property of the suite on one port, in the port's worker process."""
    prop = conformance_property
    report, run = conformance_session.check(port_name, prop.key)
    if report.state == "unavailable":
        pytest.skip(report.reason)
    if report.state != "available":
        pytest.fail(f"port {port_name!r} is {report.state}: {report.reason}", pytrace=False)
    (outcome,) = report.outcomes[-1:] or [None]
    if outcome is None or outcome.property != prop.key:
        pytest.fail(f"port {port_name!r} gave no outcome for {prop.key}", pytrace=False)
    if outcome.status in ("skip", "reference"):
        pytest.skip(outcome.message)
    reason = port_expectations(port_name).expected.get(prop.key)
    if reason is not None:
        if outcome.status == "fail":
            pytest.xfail(f"expected failure: {reason}")
        if outcome.status == "pass":
            warnings.warn(
                f"{port_name}: '{prop.key}' is listed as failing but passed; remove it",
                StaleExpectationWarning,
                stacklevel=1,
            )
    if outcome.failed:
        printed = _printed(run)
        pytest.fail(f"{outcome.message}{printed}", pytrace=False)


def test_mutant(mutant_name, conformance_session):
    """The suite rejects the mutant with the property aimed at its bug, in its family's worker."""
    result, run = conformance_session.hunt(mutant_name)
    if result.status == "unavailable":
        pytest.skip(result.message)  # its framework is not installed
    expected = MUTANTS[mutant_name].killed_by
    if result.status != "killed":
        said = f"{mutant_name} {result.status}: {result.message}{_printed(run)}"
        pytest.fail(said, pytrace=False)
    if result.killed_by != expected:
        pytest.fail(f"{mutant_name} killed by {result.killed_by}, not {expected}: "
                    f"{result.message}", pytrace=False)  # fmt: skip
    # Killed by a failed check, not by crashing the suite.
    if result.message.startswith(f"[{mutant_name}] raised"):
        pytest.fail(result.message, pytrace=False)


def _printed(run: PortRun) -> str:
    text = tail(run.output, lines=20)
    return f"\n{run.port or f'the {run.family} worker'} printed:\n{text}" if text else ""
