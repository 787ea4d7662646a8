"""The cache's locks: each names its holder, a wait says whom it waits for, and a stopped or
dead holder is not waited for forever.

Runs on one machine share the cache (`environment.cache_root`), so a worker of one run may
hold a lock (the example bank's, while it makes an entry) that a worker of another run needs.
The lock is the kernel's (`flock`: released when its holder exits). A holder that never
finishes would leave the waiter silent, and the waiter's supervisor would stop it as a hung
port ("no progress"), blaming the port. So here:

- the holder writes its pid and host into the lock file once it holds it;
- a waiter polls, and every `NOTE_SECONDS` says whom it waits for (`wait_notes_to`: a
  worker's notes go to its parent as messages, which are progress: time spent waiting on
  the cache never counts against a port's timeout); past `LONG_WAIT_SECONDS` it also warns,
  once, naming the lock and its holder;
- a holder on this host that is gone (its pid dead, the lock kept by a process it started)
  or stopped (state T in /proc/<pid>/stat, as SIGSTOP or Ctrl-Z leave it) for
  `stopped_seconds()` is given up on: the waiter goes on without the lock, with one warning.
  What the lock guards must allow that: the bank's entries are written whole, by a rename,
  and two makers make the same entry.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from . import environment

#: How often a waiter says whom it waits for.
NOTE_SECONDS = 0.5
#: A wait this long is warned about (once per lock), whoever holds it.
LONG_WAIT_SECONDS = 10.0
#: How long a stopped holder is waited for (`REMAT_LOCK_STOPPED_SECONDS` sets it).
STOPPED_ENV = "REMAT_LOCK_STOPPED_SECONDS"
STOPPED_SECONDS = 10.0

_NOTES: list[Callable[[str], None]] = []


def wait_notes_to(sink: Callable[[str], None]) -> None:
    """Hand this process's waiting notes to `sink` (a worker's go to its parent)."""
    _NOTES.append(sink)


def stopped_seconds() -> float:
    """How long a stopped holder is waited for: `$REMAT_LOCK_STOPPED_SECONDS`, else 10 s."""
    setting = os.environ.get(STOPPED_ENV, "")
    try:
        seconds = float(setting) if setting else STOPPED_SECONDS
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        environment.warn(f"{STOPPED_ENV}={setting!r} is not a number of seconds: 10 s it is")
        return STOPPED_SECONDS
    return seconds


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as its file says: pid and host (0 and "" when it says nothing)."""

    pid: int = 0
    host: str = ""

    @property
    def here(self) -> bool:
        return bool(self.pid) and self.host == socket.gethostname()

    def state(self) -> str:
        """ "gone", "stopped", "running", or "unknown" (another host, or no record)."""
        if not self.here:
            return "unknown"
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except FileNotFoundError:
            return "gone"
        except OSError:  # no /proc (macOS): only whether it is alive
            return "running" if _alive(self.pid) else "gone"
        fields = stat[stat.rfind(")") + 2 :].split()  # after "(comm)", which may hold spaces
        state = fields[0] if fields else "?"
        if state in ("Z", "X"):
            return "gone"
        return "stopped" if state in ("T", "t") else "running"

    def describe(self) -> str:
        if not self.pid:
            return "an unknown process (its lock file names none)"
        return f"pid {self.pid} on host {self.host}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder(path: Path) -> Holder:
    """The holder `path` records (an empty `Holder` when it records none it can read)."""
    try:
        data = json.loads(path.read_text() or "{}")
        return Holder(int(data.get("pid", 0)), str(data.get("host", "")))
    except (OSError, ValueError, TypeError, AttributeError):
        return Holder()


@contextlib.contextmanager
def held(path: Path, waiting: Callable[[], None] | None = None) -> Iterator[bool]:
    """Hold the lock at `path` for a while (yields True), or go on without it (yields False)
    where its holder is gone or stopped past the bound; `waiting()` is called with every
    note, as the notes' sink is (see the module docstring). Raises OSError when the lock
    file cannot be made."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): two makers may both make it; both are right
        yield False
        return
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _wait(fcntl, descriptor, path, waiting):
            yield False
            return
        try:
            _record(descriptor)
            yield True
        finally:
            with contextlib.suppress(OSError):  # no one's: a waiter reads no stale holder
                os.ftruncate(descriptor, 0)
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def _record(descriptor: int) -> None:
    """Write this process's pid and host into the lock file it holds (a waiter reads them)."""
    with contextlib.suppress(OSError):  # a full disk: the lock holds without its record
        os.ftruncate(descriptor, 0)
        record = json.dumps({"pid": os.getpid(), "host": socket.gethostname()})
        os.pwrite(descriptor, record.encode(), 0)


def _wait(fcntl, descriptor: int, path: Path, waiting: Callable[[], None] | None) -> bool:
    """Take the lock (True), or give up on a gone or stopped holder (False)."""
    started, stopped_since, last = time.monotonic(), None, (None, "")
    bound = stopped_seconds()
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        who = holder(path)
        state = who.state()
        now = time.monotonic()
        stopped_since = (stopped_since or now) if state == "stopped" else None
        # Gone twice running, the same holder: not a record read as the next holder took it.
        gone = state == "gone" and last == (who, "gone")
        last = (who, state)
        if gone or (stopped_since is not None and now - stopped_since >= bound):
            how = "gone" if state == "gone" else f"stopped for {now - stopped_since:.0f} s"
            environment.warn(
                f"the cache's lock {path} is held by {who.describe()}, which is {how}: "
                "went on without it (what it guards is made again here)"
            )
            return False
        note = f"waiting for the cache's lock {path}, held by {who.describe()} ({state})"
        if now - started >= LONG_WAIT_SECONDS:
            environment.warn(note, once=f"lock {path}")
        for sink in (*_NOTES[-1:], *([lambda _: waiting()] if waiting else [])):
            sink(note)
        time.sleep(NOTE_SECONDS)
