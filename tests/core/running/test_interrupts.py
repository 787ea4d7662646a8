"""SIGINT and SIGTERM stop a run cleanly: no orphans, no temporary files, no traceback.

Each test starts a real command in a session of its own, waits until it is
at work (a port's worker hangs in its vjp, having started a process of its
own, as inductor does; or a comparison's fresh process runs; or the bench
imported its framework), collects the process tree, sends the signal, and
then asserts the exit code, the report, that every process of the tree is
gone, and that the command's `TMPDIR` (a fresh directory) is empty.
"""

from __future__ import annotations

import contextlib
import csv as csv_module
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.helpers import ROOT, make_distribution

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="39 s alone: real runs stopped by signals, each waited for"),
]

psutil = pytest.importorskip("psutil")

SIGNAL_PORTS = '''
"""Ports that hang where a test needs them to, and say so."""

import os
import subprocess
import sys
import time

from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint


class MarkedHangPort(JaxCheckpoint):
    name = "marked_hang_port"

    def differentiable(self, params, x, checkpoint):  # vjp's first call (an own vjp is refused)
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        open(os.environ["SIGNAL_TEST_MARKER"], "w").close()
        time.sleep(3600)


class FirstCallHangPort(JaxCheckpoint):
    """Hangs in its exercise in compare's first-call process only (where every compilation
    cache is off), which has set up its environment by then."""

    name = "first_call_hang_port"

    def nn_checkpoint_forward(self, seed, x, features):
        if os.environ.get("REMAT_JAX_CACHE") == "off":
            open(os.environ["SIGNAL_TEST_MARKER"], "w").close()
            time.sleep(3600)
        return super().nn_checkpoint_forward(seed, x, features)
'''


@pytest.fixture(scope="module")
def signal_ports(tmp_path_factory):
    pytest.importorskip("flax")  # the canonical port
    root = tmp_path_factory.mktemp("signal_ports")
    ports = {
        "marked_hang_port": "signal_ports:MarkedHangPort",
        "first_call_hang_port": "signal_ports:FirstCallHangPort",
    }
    return make_distribution(root, "signal-ports", ports, {"signal_ports.py": SIGNAL_PORTS})


def _environment(tmp_path: Path, ports: Path) -> dict[str, str]:
    (tmp_path / "tmp").mkdir()
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ports), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "TMPDIR": str(tmp_path / "tmp"),  # so that "no temporary directory left" is exact
        "REMAT_CACHE": str(tmp_path / "cache"),
        "SIGNAL_TEST_MARKER": str(tmp_path / "hanging"),
        "JAX_PLATFORMS": "cpu",
        "COLUMNS": "200",
    }


# A shell starts a job with SIGINT and SIGTERM at their defaults and unblocked. A test's own
# process may not have them so: something run in-process in pytest's workers left SIGINT
# ignored (3 of 4 full runs here, the inner pytest never saw its Ctrl-C; the same failure
# when this file is started with SIGINT ignored), and a child inherits that across exec, so
# Python never turns Ctrl-C into KeyboardInterrupt. The run under test starts through this,
# which restores both and execs the command, as a shell would.
_AS_A_SHELL_WOULD = (
    "import os, signal, sys; "
    "[signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]; "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _AS_A_SHELL_WOULD, "-m", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell's job is
    )


def _wait_until(ready, process: subprocess.Popen, what: str, limit: float = 600) -> None:
    deadline = time.monotonic() + limit
    while not ready():
        if process.poll() is not None:
            _, err = process.communicate()
            pytest.fail(f"it ended (exit {process.returncode}) before {what}:\n{err[-3000:]}")
        if time.monotonic() > deadline:
            _kill_session(process)
            pytest.fail(f"not {what} within {limit:.0f} s")
        time.sleep(0.2)


def _kill_session(process: subprocess.Popen) -> None:
    for child in psutil.Process(process.pid).children(recursive=True):
        child.kill()
    process.kill()
    process.communicate()


def _tree(process: subprocess.Popen) -> list:
    return psutil.Process(process.pid).children(recursive=True)


def _cmdline(process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _alive(processes: list) -> list[str]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{process.pid} {' '.join(process.cmdline())[:200]}")
        except psutil.NoSuchProcess:
            pass
    return alive


def _finish(process: subprocess.Popen, how, signum: int) -> tuple[str, str]:
    how(process.pid, signum)
    try:
        return process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        _kill_session(process)
        pytest.fail(f"still running 120 s after {signal.Signals(signum).name}")


def _assert_clean(tree: list, tmp_path: Path, stderr: str) -> None:
    assert "Traceback" not in stderr, stderr[-3000:]
    # A worker told to stop may still be between its exit and its end when the run has
    # ended (seen once: alive, its command line already gone): wait for each to end, as
    # long as a stuck one would take to show (a leaked worker is still there after it).
    psutil.wait_procs(tree, timeout=30)
    assert not _alive(tree), _alive(tree)
    assert sorted(os.listdir(tmp_path / "tmp")) == []


@pytest.mark.parametrize(
    ("signum", "how", "json_out"),
    [
        (signal.SIGTERM, os.kill, True),  # `kill PID`, as a CI runner or a supervisor does
        (signal.SIGINT, os.killpg, True),  # Ctrl-C: the whole foreground group
        (signal.SIGINT, os.kill, False),
    ],
    ids=["sigterm-json", "ctrl-c-json", "sigint-text"],
)
def test_a_signal_stops_the_run_and_keeps_what_finished(
    signal_ports, tmp_path, signum, how, json_out
):
    env = _environment(tmp_path, signal_ports)
    args = ["conformance", "--no-mutants", "--profile", "dev", "--examples", "2"]
    args += ["--property", "b", "--property", "c", "--timeout", "600"]
    args += ["--implementation", "jax_checkpoint", "--implementation", "marked_hang_port"]
    args += ["--json"] if json_out else []
    process = _start(args, env)
    marker = Path(env["SIGNAL_TEST_MARKER"])
    _wait_until(marker.exists, process, "the port hung in its vjp")
    tree = _tree(process)
    # The hanging port's worker (a port from another package: a worker of its own) and the
    # process it started are there; jax_checkpoint's worker may have finished already.
    commands = [" ".join(_cmdline(child)) for child in tree]
    assert any("time.sleep(3600)" in command for command in commands), commands
    assert any("conformance.running.worker:serve" in command for command in commands), commands
    stdout, stderr = _finish(process, how, signum)
    assert process.returncode == 128 + signum, stderr[-3000:]
    _assert_clean(tree, tmp_path, stderr)
    assert "interrupted" in stderr
    if not json_out:  # never "passed": it says it was interrupted (issue 76)
        assert "The run passed" not in stdout
        assert "The run was interrupted" in " ".join(stdout.split())
        return
    report = json.loads(stdout)  # exactly one document
    assert report["interrupted"] is True
    assert report["verdict"] == "interrupted"
    (hung,) = [port for port in report["ports"] if port["name"] == "marked_hang_port"]
    outcomes = {o["property"]: o["status"] for o in hung["outcomes"]}
    assert outcomes == {"b_forward": "pass"}  # what finished; c_vjp never did
    assert hung["not_run"] == ["c_vjp"]  # and says so


def test_a_hangup_keeps_what_finished_and_writes_the_side_outputs(signal_ports, tmp_path):
    """SIGHUP (a closed terminal, a dropped ssh session) stops the run as SIGTERM does: exit
    129, the report of what finished, and its --markdown and --csv files (on cb1e6a1: exit
    129, nothing printed, no file)."""
    env = _environment(tmp_path, signal_ports)
    markdown, csv = tmp_path / "run.md", tmp_path / "run.csv"
    args = ["conformance", "--no-mutants", "--profile", "dev", "--examples", "2", "--json"]
    args += ["--property", "b", "--property", "c", "--timeout", "600"]
    args += ["--implementation", "marked_hang_port", "--markdown", str(markdown)]
    args += ["--csv", str(csv)]
    process = _start(args, env)
    _wait_until(Path(env["SIGNAL_TEST_MARKER"]).exists, process, "the port hung in its vjp")
    tree = _tree(process)
    stdout, stderr = _finish(process, os.kill, signal.SIGHUP)
    assert process.returncode == 128 + signal.SIGHUP, stderr[-3000:]
    _assert_clean(tree, tmp_path, stderr)
    report = json.loads(stdout)
    assert report["interrupted"] is True
    (hung,) = report["ports"]
    assert {o["property"]: o["status"] for o in hung["outcomes"]} == {"b_forward": "pass"}
    assert "marked_hang_port" in markdown.read_text()
    rows = list(csv_module.DictReader(csv.read_text().splitlines()))
    assert [(r["port"], r["property"], r["status"]) for r in rows if r["property"]] == [
        ("marked_hang_port", "b_forward", "pass")
    ]


def test_a_finished_run_is_not_marked_interrupted(signal_ports, tmp_path):
    env = _environment(tmp_path, signal_ports)
    args = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev"]
    args += ["--examples", "2", "--property", "b", "--implementation", "jax_checkpoint"]
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["interrupted"] is False


def test_sigterm_stops_compare_and_its_fresh_process(signal_ports, tmp_path):
    """Sent once the first-call process has set itself up (its compilation caches off, it
    made a temporary directory for what inductor writes all the same): that goes too."""
    env = _environment(tmp_path, signal_ports)
    args = ["conformance", "compare", "--implementation", "first_call_hang_port"]
    args += ["--dim", "8", "--features", "8", "--repeats", "3", "--first-call"]
    process = _start(args, env)
    marker = Path(env["SIGNAL_TEST_MARKER"])
    _wait_until(marker.exists, process, "its first-call process hung in the port's exercise")
    tree = _tree(process)
    assert any("conformance.comparison.first_call" in " ".join(_cmdline(p)) for p in tree)
    _, stderr = _finish(process, os.kill, signal.SIGTERM)
    assert process.returncode == 143, stderr[-3000:]
    _assert_clean(tree, tmp_path, stderr)


def test_sigint_stops_the_bench(tmp_path):
    pytest.importorskip("jax")
    env = _environment(tmp_path, tmp_path)
    args = ["conformance", "bench", "--framework", "jax", "--out", str(tmp_path / "out")]
    process = _start(args, env)

    def framework_loaded() -> bool:
        return any("jaxlib" in m.path for m in psutil.Process(process.pid).memory_maps())

    _wait_until(framework_loaded, process, "it loaded JAX")
    tree = _tree(process)
    _, stderr = _finish(process, os.killpg, signal.SIGINT)
    assert process.returncode == 130, stderr[-3000:]
    _assert_clean(tree, tmp_path, stderr)


def test_interrupting_pytest_leaves_no_port_worker(signal_ports, tmp_path):
    env = _environment(tmp_path, signal_ports)
    args = ["pytest", "tests/core/running/test_conformance.py", "-n", "0", "-p", "no:cacheprovider"]
    args += ["-q", "--port", "marked_hang_port", "-k", "c_vjp", "--conformance-timeout", "600"]
    args += ["--conformance-examples", "2"]
    process = _start(args, env)
    marker = Path(env["SIGNAL_TEST_MARKER"])
    _wait_until(marker.exists, process, "the port hung in its vjp")
    tree = _tree(process)
    assert len(tree) >= 2, tree  # the port's worker, and the process the port started
    _finish(process, os.killpg, signal.SIGINT)  # Ctrl-C
    assert process.returncode == pytest.ExitCode.INTERRUPTED
    # multiprocessing's resource tracker (the standard library's, not a port's) ends by itself
    # once the pipe it reads closes; every other process must be gone already.
    tracker = [p for p in tree if "resource_tracker" in " ".join(_cmdline(p))]
    assert not _alive([p for p in tree if p not in tracker]), _alive(tree)
    _, still = psutil.wait_procs(tracker, timeout=10)
    assert not _alive(still)


def test_a_killed_run_leaves_no_worker_either(signal_ports, tmp_path):
    """SIGKILL cannot be caught: each worker ends its own process group when its parent dies."""
    env = _environment(tmp_path, signal_ports)
    args = ["conformance", "--no-mutants", "--profile", "dev", "--examples", "2"]
    args += ["--property", "c", "--timeout", "600", "--implementation", "marked_hang_port"]
    process = _start(args, env)
    marker = Path(env["SIGNAL_TEST_MARKER"])
    _wait_until(marker.exists, process, "the port hung in its vjp")
    tree = _tree(process)
    _finish(process, os.kill, signal.SIGKILL)
    _, alive = psutil.wait_procs(tree, timeout=30)  # the workers poll for it
    assert not _alive(alive), _alive(alive)


_SIGNAL_IN_A_CALLBACK = """
import os, signal, sys
from conformance.running import interrupts

class Collected:
    def __del__(self):  # Python cannot raise from here: the exception is "unraisable"
        os.kill(os.getpid(), signal.SIGINT)

try:
    with interrupts.handled():
        Collected()
        print("went on", interrupts.received() == signal.SIGINT)
        interrupts.check()
except interrupts.Interrupted as stop:
    print("check raised:", stop)
"""


def test_a_signal_inside_a_callback_is_kept_and_raised_at_the_next_check():
    # JAX's garbage-collection callback is such a place: without the hook, Python prints
    # "Exception ignored ... Traceback" there (seen in test_sigint_stops_the_bench).
    done = subprocess.run(
        [sys.executable, "-c", _AS_A_SHELL_WOULD, "-c", _SIGNAL_IN_A_CALLBACK],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["went on True", "check raised: interrupted by SIGINT"]
    assert "Traceback" not in done.stderr
    assert "Exception ignored" not in done.stderr


def _signalled(went_on: list, *, deferred: bool) -> None:
    """SIGINT to this process, then one more step, in a `deferred()` block or not."""
    from conformance.running import interrupts

    with interrupts.deferred() if deferred else contextlib.nullcontext():
        os.kill(os.getpid(), signal.SIGINT)
        went_on.append("the step after the signal")


def test_a_signal_while_a_framework_loads_is_raised_when_the_load_ends():
    """Raised inside a native extension's set-up, the exception would abort the process
    (SIGABRT): `deferred()` notes the signal and raises it once the block is done."""
    from conformance.running import interrupts

    went_on: list = []
    with interrupts.handled(), pytest.raises(interrupts.Interrupted) as raised:
        _signalled(went_on, deferred=True)
    assert raised.value.exit_code == 130
    assert went_on == ["the step after the signal"]
    # Outside the block, as before: raised where the main thread is, before the next step.
    went_on.clear()
    with interrupts.handled(), pytest.raises(interrupts.Interrupted):
        _signalled(went_on, deferred=False)
    assert went_on == []
    # Answered once the handled block ends: nothing later in this process is interrupted
    # by it (a stale signal stopped the next in-process bench of a test session).
    assert interrupts.received() is None
    with interrupts.deferred():
        went_on.append("a later load")
    assert went_on == ["a later load"]
