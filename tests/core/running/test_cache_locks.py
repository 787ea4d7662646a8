"""Issue 61, case 1: a lock in the shared cache held by another run never blames a port.

A run stopped (SIGSTOP) while its worker held an example-bank lock made the next run on the
same cache report the port `timeout` ("no progress"), naming no lock. Now the waiter names
the lock and its holder (pid, host), its wait is progress (never counted against the port's
timeout), and a holder that is stopped past a bound, or gone, is given up on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.checking.properties import BY_KEY
from conformance.running import environment, example_bank, profiles
from tests.support.helpers import ROOT, run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

pytest.importorskip("fcntl")

HOLDER = r"""
import os, signal, sys, time
from pathlib import Path

lock, marker, how = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
lock.parent.mkdir(parents=True, exist_ok=True)
try:
    from conformance.running.locks import held
except ImportError:  # the code before issue 61's case 1: a plain flock, nothing recorded
    import contextlib, fcntl

    @contextlib.contextmanager
    def held(path):
        with open(path, "w") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            yield True

with held(lock):
    if how == "stop":  # a run stopped with SIGSTOP (Ctrl-Z) while it holds the lock
        marker.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGSTOP)
    else:  # gone: it dies; a process it started keeps the lock (an inherited descriptor)
        child = os.fork()
        if child == 0:
            time.sleep(600)
            os._exit(0)
        marker.write_text(f"{os.getpid()} {child}")
        os._exit(0)
"""


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone"
    return stat[stat.rfind(")") + 2]


def _wait_for(predicate, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {seconds} s")
        time.sleep(0.02)


@pytest.fixture
def hold(tmp_path):
    """`hold(lock, how)`: a process holding `lock`, stopped ("stop") or dead with a child
    keeping it ("gone"); returns the pids. Every process it started is killed at the end."""
    started: list[int] = []

    def holding(lock: Path, how: str) -> list[int]:
        marker = tmp_path / f"held-{len(started)}"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        process = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(marker), how],
                                   env=env)  # fmt: skip
        started.append(process.pid)
        _wait_for(lambda: marker.exists() and marker.read_text(), "holder")
        pids = [int(p) for p in marker.read_text().split()]
        started.extend(pids)
        if how == "stop":
            _wait_for(lambda: _state(pids[0]) in "Tt", "stopped holder")
        else:
            process.wait()
        return pids

    yield holding
    for pid in started:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in started:  # reap the direct children; a grandchild is reaped by init
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _warnings(monkeypatch) -> list[str]:
    said: list[str] = []
    monkeypatch.setattr(environment, "_WARNING_SINKS", [lambda text, key: said.append(text)])
    monkeypatch.setattr(environment, "_WARNED", set())
    return said


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["stop", "gone"])
def test_a_stopped_or_gone_holder_is_named_then_given_up_on(tmp_path, hold, monkeypatch, how):
    monkeypatch.setenv("REMAT_LOCK_STOPPED_SECONDS", "0.5")
    said = _warnings(monkeypatch)
    entry = tmp_path / "examples" / "key.entry"
    holder_pid = hold(entry.with_name("key.lock"), how)[0]
    notes: list[str] = []

    def waiting(*_):
        notes.append("note")
        if len(notes) > 100:  # 50 s of notes: it waits for good
            raise AssertionError("still waiting for a holder that is " + how)

    assert example_bank._kept(entry, lambda: [7], waiting) == [7]
    assert example_bank._read(entry, "key") == ([7],)  # made, and kept
    (warning,) = [text for text in said if "went on without it" in text]
    assert str(entry.with_name("key.lock")) in warning
    assert f"pid {holder_pid} on host {socket.gethostname()}" in warning
    assert ("stopped for" if how == "stop" else "which is gone") in warning


def test_a_stopped_holder_is_waited_for_10_s_unless_the_variable_says_otherwise(monkeypatch):
    from conformance.running import locks

    monkeypatch.delenv(locks.STOPPED_ENV, raising=False)
    assert locks.stopped_seconds() == 10.0  # as docs/USAGE.md says
    monkeypatch.setenv(locks.STOPPED_ENV, "2.5")
    assert locks.stopped_seconds() == 2.5


def test_the_waiting_notes_name_the_lock_and_its_holder(tmp_path, hold, monkeypatch):
    from conformance.running import locks

    monkeypatch.setenv("REMAT_LOCK_STOPPED_SECONDS", "600")
    lock = tmp_path / "key.lock"
    (pid,) = hold(lock, "stop")
    notes: list[str] = []

    class Enough(Exception):
        pass

    def sink(text):
        notes.append(text)
        raise Enough

    monkeypatch.setattr(locks, "_NOTES", [sink])
    with pytest.raises(Enough), locks.held(lock):
        pass
    assert notes == [
        f"waiting for the cache's lock {lock}, held by pid {pid} on host "
        f"{socket.gethostname()} (stopped)"
    ]


@pytest.mark.timeout(300)
@pytest.mark.slow(reason="10 s alone: waits out a stopped lock holder on purpose (8 s)")
def test_a_run_waits_out_another_runs_stopped_worker_without_blaming_the_port(
    tmp_path, hold, monkeypatch
):
    """The case as found: run A stopped holding the lock of a_init's cases; run B on the same
    cache, with a timeout shorter than the wait, passes a_init and names the lock."""
    pytest.importorskip("jax")
    cache = tmp_path / "cache"
    monkeypatch.setenv("REMAT_CACHE", str(cache))
    profiles.load("ci")
    prop = BY_KEY["a_init"]
    found: list[Path] = []
    monkeypatch.setattr(
        example_bank, "_kept", lambda path, make, waiting=None, keep=True: found.append(path) or []
    )
    example_bank.cases(prop, "menu", prop.capped(1))  # where run B will look for them
    profiles.load()
    (entry,) = found
    (pid,) = hold(entry.with_name(f"{entry.stem}.lock"), "stop")
    args = ["-m", "conformance", "--profile", "ci", "--examples", "1", "--no-mutants"]
    args += ["--implementation", "jax_checkpoint", "--property", "a_init", "--timeout", "2"]
    # The wait (8 s) is longer than the timeout and its grace (2 + 2 s).
    done = run_python(args, tmp_path, env={"REMAT_CACHE": str(cache),
                                           "REMAT_LOCK_STOPPED_SECONDS": "8"})  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "no progress" not in done.stdout
    assert f"the cache's lock {entry.with_name(entry.stem + '.lock')}" in done.stderr
    assert f"held by pid {pid} on host {socket.gethostname()}" in done.stderr
    assert entry.exists()  # made by run B
