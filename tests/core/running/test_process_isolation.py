"""`conformance.running.isolation`: a function in a fresh process, and how it ended.

The targets below run in the child (it imports this module by name). Each
case checks the status reported and that no process it started outlives it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from conformance.running import isolation

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

HERE = __name__


def add(a, b):
    print("adding")
    return a + b


def raise_value_error():
    raise ValueError("the child says no")


def segfault():
    print("about to crash", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)


def hang_with_a_child():
    """Start a grandchild, say both process ids, then sleep past any timeout."""
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(f"pids {os.getpid()} {grandchild.pid}", flush=True)
    time.sleep(600)


def noisy():
    for i in range(2000):
        print(f"noise {i}")
        print(f"more noise {i}", file=sys.stderr)
    sys.stdout.flush()
    os.write(1, b"native noise\n")  # below Python's streams, as a C library would write
    return "quiet answer"


def read_env(name):
    return os.environ.get(name)


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _children_running(function: str) -> list[int]:
    """Our descendants whose command line names `function` as a target."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if f"{HERE}:{function}" in " ".join(child.cmdline()) and not _gone(child.pid):
                found.append(child.pid)
        except psutil.NoSuchProcess:
            pass
    return found


def test_a_function_that_returns():
    result = isolation.run(f"{HERE}:add", (2, 3), timeout=300)
    assert (result.status, result.value, result.exit_code) == ("returned", 5, 0), result
    assert result.output == "adding"
    assert not _children_running("add")


def test_a_function_that_raises():
    result = isolation.run(f"{HERE}:raise_value_error", timeout=300)
    assert result.status == "raised", result
    assert result.error == "ValueError: the child says no"
    assert not _children_running("raise_value_error")


def test_a_segfault_is_a_crash_with_its_signal_and_last_lines():
    result = isolation.run(f"{HERE}:segfault", timeout=300, lines=40)
    assert result.status == "crashed", result
    assert result.error == "killed by SIGSEGV"
    assert result.exit_code == -signal.SIGSEGV
    assert "about to crash" in result.output
    assert "Segmentation fault" in result.output  # faulthandler's report, with the stack
    assert "in segfault" in result.output
    assert not _children_running("segfault")


def test_a_hang_is_stopped_at_the_timeout_with_what_it_started():
    result = isolation.run(f"{HERE}:hang_with_a_child", timeout=3)
    assert result.status == "timeout", result
    assert result.error == "no answer within 3 s"
    assert result.exit_code == -signal.SIGKILL
    (line,) = [line for line in result.output.splitlines() if line.startswith("pids ")]
    child, grandchild = (int(pid) for pid in line.split()[1:])
    deadline = time.monotonic() + 30  # the grandchild's reaping is its new parent's business
    while not (_gone(child) and _gone(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(child)
    assert _gone(grandchild)


def test_noise_goes_to_the_captured_output_not_the_caller(capfd):
    result = isolation.run(f"{HERE}:noisy", timeout=300, lines=3)
    assert (result.status, result.value) == ("returned", "quiet answer"), result
    assert result.output.splitlines()[-1] == "native noise"
    assert len(result.output.splitlines()) == 3
    out, err = capfd.readouterr()
    assert "noise" not in out
    assert "noise" not in err


def test_the_environment_given_is_the_childs():
    env = dict(os.environ, REMAT_ISOLATION_TEST="given")
    assert isolation.run(f"{HERE}:read_env", ("REMAT_ISOLATION_TEST",), env=env).value == "given"
    assert "REMAT_ISOLATION_TEST" not in os.environ  # the caller's own is left alone


class _Stop(BaseException):
    pass


def test_an_interrupt_while_waiting_kills_the_child_and_propagates():
    def interrupt(signum, frame):
        raise _Stop

    started_before = set(isolation._live)  # the pytest plugin's own workers may be live here
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 3)
    try:
        with pytest.raises(_Stop):
            isolation.run(f"{HERE}:hang_with_a_child")  # no timeout: only the signal ends it
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not _children_running("hang_with_a_child")
    assert not (isolation._live - started_before)  # the child it started is ended and forgotten


def test_connection_outside_an_isolated_process_says_so():
    with pytest.raises(RuntimeError, match=r"conformance\.running\.isolation"):
        isolation.connection()


def test_a_process_ended_without_teardown_still_ends_as_python_would():
    """`exit_now` (an isolated child's and the CLI's exit) skips the modules' teardown only:
    threads are joined, `atexit` handlers run, buffered output is written, the code kept."""
    code = (
        "import atexit, threading, time\n"
        "from conformance.running.processes import exit_now\n"
        "atexit.register(print, 'atexit ran')\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\n"
        "print('buffered', end=' ')\n"
        "exit_now(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert done.stdout.split() == ["buffered", "thread", "done", "atexit", "ran"]
