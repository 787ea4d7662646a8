"""A function run in a fresh Python process the caller can lose: the run's one isolation.

`Child` starts `python -c BOOT module:function` (a fresh interpreter: it
imports only what the function needs, and the command line names it) with
a given environment, as the leader of a new session and so of its own
process group: whatever it starts (inductor's compile workers, the C++
compiler) is stopped with it (`kill`, `end`), and ends itself when the
parent dies (`processes.watch_parent`). Its stdout and stderr (Python's and
native code's) go to a file; faulthandler leaves a fatal signal's Python
stack there. It gets the parent's `sys.path`, then the function's
(pickled) arguments, through a connection that stays open for the
function's own messages (`connection()`, the suite's worker protocol).

`run` is the one-call form: it waits for the function's return value,
and reports a crash (the signal or exit code and the last lines printed)
or a hang past the timeout as a `Result`, never as an exception. An
exception that reaches it from the caller's side (`interrupts.Interrupted`:
SIGINT, SIGTERM) kills the process group first, then propagates.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing import connection as connections
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from . import processes

# Standard library only until `sys.path` is the parent's: the package may not be importable yet.
_BOOT = (
    "import sys; from multiprocessing.connection import Connection; "
    "c = Connection(int(sys.argv[2])); sys.path[:] = c.recv(); "
    "from conformance.running.isolation import _serve; _serve(c, sys.argv[1])"
)

_live: set[Child] = set()  # started and not yet ended, for `kill_all`
_to_parent: Connection | None = None  # in a child: its connection (`connection()`)


class Child:
    """The parent's handle on one isolated process running `target` ("module:function")."""

    def __init__(
        self, target: str, args: tuple = (), *, output: Path, env=None, own_group: bool = True
    ):
        """`own_group=False`: the child stays in this process's group (its work counts as
        this process's, and it is stopped with it); `kill` then ends the child alone."""
        self.target, self.output, self.own_group = target, output, own_group
        self.connection, child_end = Pipe()
        with open(output, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, target, str(child_end.fileno())],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                pass_fds=(child_end.fileno(),), start_new_session=own_group,
            )  # fmt: skip
        child_end.close()
        _live.add(self)
        self.send(list(sys.path))
        self.send(tuple(args))

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, message: Any) -> None:
        with contextlib.suppress(OSError):  # it died; `death()` says how
            self.connection.send(message)

    def receive(self) -> list[Any]:
        """Every message waiting now (none once the process is gone and the pipe drained)."""
        messages = []
        try:
            while self.connection.poll():
                messages.append(self.connection.recv())
        except (EOFError, OSError):
            pass
        return messages

    @property
    def alive(self) -> bool:
        """Running (an exited process is not reaped here: its group number stays its own)."""
        if self.process.returncode is not None:
            return False
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
        except ChildProcessError:
            return False

    def death(self) -> str:
        """How the process ended: a signal's name or an exit code."""
        return describe(self.exit_code(wait=5))

    def exit_code(self, wait: float = 0.0) -> int | None:
        """Its exit code (negative: the signal), waiting up to `wait` seconds; None if running."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=wait)
        return self.process.returncode

    def work(self) -> tuple[float, int] | None:
        """CPU seconds and bytes read so far by it and its group (`processes.group_work`)."""
        return processes.group_work(self.pid) if self.alive else None

    def kill(self) -> None:
        """SIGKILL it and every process of its group, then reap it."""
        self.end(grace=0)

    def end(self, grace: float) -> None:
        """Wait up to `grace` seconds for it to exit, then kill what is left of its group."""
        deadline = time.monotonic() + grace
        while self.alive and time.monotonic() < deadline:
            time.sleep(0.02)
        # Killed before it is reaped: while unreaped, its number names no other group.
        if self.process.returncode is None and self.own_group:
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self.connection.close()
        _live.discard(self)


def describe(code: int | None) -> str:
    """An exit code in words: "killed by SIGSEGV", "exit code 3", "still running"."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def kill_all() -> None:
    """Kill every isolated process this one started and has not ended, with their groups."""
    for child in list(_live):
        child.kill()


@dataclass
class Result:
    """How an isolated call ended.

    `status` is "returned" (`value` holds the return value), "raised" (`error`:
    "Type: message"), "crashed" (`error`: how it died) or "timeout";
    `output` holds the last lines it printed, `exit_code` the process's.
    """

    status: str
    value: Any = None
    error: str = ""
    output: str = ""
    exit_code: int | None = None


def run(
    target: str, args: tuple = (), *, env=None, timeout: float | None = None, lines: int = 15
) -> Result:
    """Call `target(*args)` in a fresh isolated process and wait for how it ends."""
    with tempfile.TemporaryDirectory(prefix="remat-isolated-") as scratch:
        output = Path(scratch) / "output"
        child = Child(target, args, output=output, env=env)
        try:
            result = _wait(child, timeout)
            child.end(grace=10)  # it exits once it has answered; what it started goes too
        except BaseException:  # interrupted: leave nothing running
            child.kill()
            raise
        result.exit_code = child.process.returncode
        if result.status == "crashed":
            result.error = describe(result.exit_code)
        result.output = tail(output, lines)
    return result


def _wait(child: Child, timeout: float | None) -> Result:
    if not connections.wait([child.connection], timeout=timeout):
        child.kill()
        return Result("timeout", error=f"no answer within {timeout:.0f} s")
    try:
        status, value = child.connection.recv()
    except (EOFError, OSError):  # it died before answering
        child.exit_code(wait=10)
        return Result("crashed")
    if status == "raised":
        return Result("raised", error=value)
    return Result("returned", value=value)


def tail(path: Path, lines: int = 15, limit: int = 65536) -> str:
    """The last `lines` lines of a captured output (at most `limit` bytes read)."""
    try:
        with open(path, "rb") as file:
            file.seek(0, os.SEEK_END)
            size = file.tell()
            file.seek(max(0, size - limit))
            text = file.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def connection() -> Connection:
    """In an isolated process: the connection to its parent (for messages of its own)."""
    if _to_parent is None:
        raise RuntimeError("connection() is for a function run by conformance.running.isolation")
    return _to_parent


def _serve(to_parent: Connection, target: str) -> None:
    """The child's side: import `target`, receive its arguments, call it, send what came of it."""
    global _to_parent
    _to_parent = to_parent
    processes.watch_parent()
    sys.stdout.reconfigure(line_buffering=True)  # lines reach the file before a crash
    faulthandler.enable(file=sys.stderr)  # a fatal signal leaves its Python stack there
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    try:
        args = to_parent.recv()
    except EOFError:  # the parent went away
        processes.exit_now(0)
    try:
        answer = ("returned", function(*args))
    except Exception as error:
        answer = ("raised", f"{type(error).__name__}: {error}")
    with contextlib.suppress(OSError):
        to_parent.send(answer)
    processes.exit_now(0)
