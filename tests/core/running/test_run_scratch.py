"""Issue 61, cases 4 and 12: the run's scratch directory is the run's.

A run killed with SIGKILL leaves its `remat-conformance-run-*` directory; the next run removes
it, since the directory records its owner (pid, host), and never one whose owner is alive or
on another host. A temporary directory that cannot be written, or a disk that fills up under
a port's prints, is the run's error (exit 2, naming the path), never a property's `fail`.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.running import scratch
from tests.support.helpers import make_distribution, run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

QUICK = ["--profile", "dev", "--examples", "1", "--no-mutants", "--plain"]

FULL_DISK_PORT = '''
import os

from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint


class FullDiskPort(JaxCheckpoint):
    """Its prints meet a full disk (its stdout is /dev/full), as a port flooding the run's
    captured-output file does when that file's disk fills up."""

    name = "full_disk_port"

    def forward(self, params, x, *, checkpoint=True):
        full = os.open("/dev/full", os.O_WRONLY)
        os.dup2(full, 1)
        os.close(full)
        print("full_disk_port: " + "noise " * 1000, flush=True)
        return super().forward(params, x, checkpoint=checkpoint)
'''


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _run_dir(root: Path, name: str, owner: dict | None) -> Path:
    directory = root / f"{scratch.PREFIX}{name}"
    directory.mkdir()
    (directory / "worker.out").write_text("left behind")
    if owner is not None:
        (directory / scratch.OWNER).write_text(json.dumps(owner))
    return directory


def test_only_the_directories_of_dead_owners_on_this_host_are_removed(tmp_path, monkeypatch):
    here = socket.gethostname()
    dead = _run_dir(tmp_path, "dead", {"pid": _dead_pid(), "host": here})
    alive = _run_dir(tmp_path, "alive", {"pid": os.getpid(), "host": here})
    elsewhere = _run_dir(tmp_path, "elsewhere", {"pid": _dead_pid(), "host": here + "-other"})
    unknown = _run_dir(tmp_path, "unknown", None)
    other = tmp_path / "someone-elses"
    other.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with scratch.run_directory() as mine:
        assert scratch.owner(mine) == (os.getpid(), here)
        assert not dead.exists()
        assert alive.exists()
        assert elsewhere.exists()
        assert unknown.exists()
        assert other.exists()
    assert not mine.exists()


def test_a_full_disk_where_the_owner_is_written_is_the_runs_error(tmp_path, monkeypatch):
    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(Path, "write_text", full)
    full_disk = pytest.raises(scratch.RunError, match=r"is full .*free space there")
    with full_disk as raised, scratch.run_directory():
        pass
    assert str(tmp_path / scratch.PREFIX) in str(raised.value)
    assert not list(tmp_path.iterdir())  # nothing left behind


def _wait_for(predicate, what: str, process: subprocess.Popen, seconds: float = 120):
    """Poll until `predicate()` holds (the process must still be running), or fail."""
    deadline = time.monotonic() + seconds
    while not (found := predicate()):
        if process.poll() is not None:
            pytest.fail(f"the run ended (exit {process.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {seconds} s")
        time.sleep(0.05)
    return found


@pytest.mark.timeout(300)
def test_the_next_run_removes_the_directory_of_a_run_killed_with_sigkill(tmp_path):
    root = tmp_path / "tmp"
    root.mkdir()
    env = {**os.environ, "TMPDIR": str(root), "JAX_PLATFORMS": "cpu"}
    command = [sys.executable, "-m", "conformance", "--implementation", "jax_checkpoint"]
    killed = subprocess.Popen(command + QUICK, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        (left,) = _wait_for(
            lambda: [p for p in root.glob(f"{scratch.PREFIX}*") if any(p.glob("*.out"))],
            "run directory with a worker's output in it",
            killed,
        )
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    assert left.exists()  # SIGKILL: nothing removed it
    done = subprocess.run(
        command + QUICK + ["--property", "a_init"], env=env, capture_output=True, text=True,
        timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert not left.exists(), sorted(p.name for p in root.iterdir())
    assert not list(root.glob(f"{scratch.PREFIX}*"))  # and its own went too


@pytest.mark.timeout(300)
def test_an_unusable_temporary_directory_is_the_runs_error(tmp_path):
    not_a_directory = tmp_path / "tmp-file"
    not_a_directory.write_text("")
    done = run_python(
        ["-m", "conformance", "--implementation", "jax_checkpoint", *QUICK],
        tmp_path,
        env={"TMPDIR": str(not_a_directory)},
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"the temporary directory {not_a_directory} cannot be written" in done.stderr


@pytest.mark.timeout(300)
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full to fill a disk with")
def test_a_port_printing_onto_a_full_disk_is_the_runs_error_not_a_fail(tmp_path):
    pytest.importorskip("jax")
    ports = {"full_disk_port": "full_disk:FullDiskPort"}
    path = make_distribution(tmp_path, "full-disk-port", ports, {"full_disk.py": FULL_DISK_PORT})
    done = run_python(
        ["-m", "conformance", "--implementation", "full_disk_port", "--property", "b_forward",
         *QUICK], path, env={"TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    assert "raised OSError" not in done.stdout + done.stderr
    assert "is full (No space left on device): the run cannot go on" in done.stderr
    assert f"the disk holding {tmp_path / scratch.PREFIX}" in done.stderr  # its output file
    assert not list(tmp_path.glob(f"{scratch.PREFIX}*"))  # the run removed its directory
