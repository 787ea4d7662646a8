"""The run's scratch directory: made where it can be written, owned, and cleaned after a kill.

Each run keeps its workers' captured output in a directory of its own under the temporary
directory (`remat-conformance-run-*`), removed when the run ends. A run killed with SIGKILL
cannot remove it, so the next run does: each directory records its owner (`owner.json`: pid
and host), and a run removes the ones whose owner, on this host, is dead. One whose owner is
alive, or on another host (a shared temporary directory), or that records no owner it can
read, is left alone.

The scratch directory is the run's, not a port's: a temporary directory that cannot be
written, or a disk that fills up under it, is the run's error (`RunError`: exit 2, naming
the path), never a property's failure.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIX = "remat-conformance-run-"
OWNER = "owner.json"
#: The errors that say the disk, not the port, failed a write.
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class RunError(Exception):
    """The run cannot go on for a reason of the machine's (the CLI exits 2, saying it)."""


class DiskFull(BaseException):
    """A check met a full disk (`error`): the run's error, not the port's. A BaseException,
    so that Hypothesis does not shrink it as a failure."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class RunFault(BaseException):
    """The run cannot go on, found inside a check: its working or temporary directory is
    gone, or `--reproduce` names another test. The worker says it to its parent, which ends
    the run (`RunError`, exit 2); a BaseException, so that Hypothesis does not shrink it and
    no port is failed for it."""


def environment_fault() -> str:
    """What of the run's surroundings is gone ("" when nothing is): read when a check fails,
    so that a working directory deleted under the run (frameworks call `os.getcwd()`) or a
    temporary directory removed or made read-only is the run's error, not a port's failure."""
    try:
        os.getcwd()
    except OSError as error:
        return (
            f"the working directory was deleted under the run ({error.strerror or error}): "
            "the run cannot go on; run it from a directory that exists"
        )
    temporary = Path(tempfile.gettempdir())  # the one in use (Python keeps its first choice)
    if not temporary.is_dir():
        return (
            f"the temporary directory {temporary} vanished under the run: the run cannot go "
            "on; set TMPDIR to a directory that stays"
        )
    if not os.access(temporary, os.W_OK | os.X_OK):
        return (
            f"the temporary directory {temporary} cannot be written any more: the run cannot "
            "go on; set TMPDIR to a writable directory"
        )
    return ""


def disk_full(error: BaseException | None) -> bool:
    """Whether `error` (or one it came from) is a write that found the disk full."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in FULL:
            return True
        error = error.__cause__ or error.__context__
    return False


def full_disk_message(path: Path | str, error: OSError | None = None) -> str:
    """The run's error for a full disk met while writing under `path`."""
    named = getattr(error, "filename", None) or path
    reason = (error.strerror if error is not None else None) or os.strerror(errno.ENOSPC)
    return f"the disk holding {named} is full ({reason}): the run cannot go on; free space there"


def _host() -> str:
    return socket.gethostname()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return True


def owner(directory: Path) -> tuple[int, str] | None:
    """The pid and host `directory` records, or None when it records none readable."""
    try:
        data = json.loads((directory / OWNER).read_text())
        return int(data["pid"]), str(data["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def stale(directory: Path) -> bool:
    """Whether `directory` is a run's whose owner, on this host, is dead."""
    found = owner(directory)
    return found is not None and found[1] == _host() and not _alive(found[0])


def clean_stale(root: Path) -> list[Path]:
    """Remove the run directories in `root` whose owner is dead; the ones removed."""
    removed = []
    with contextlib.suppress(OSError):
        for directory in root.glob(f"{PREFIX}*"):
            if directory.is_dir() and not directory.is_symlink() and stale(directory):
                shutil.rmtree(directory, ignore_errors=True)
                if not directory.exists():
                    removed.append(directory)
    return removed


def _root() -> Path:
    """Where run directories go: `$TMPDIR` when it is set (an unusable one is an error, not
    quietly another place), else Python's choice."""
    chosen = os.environ.get("TMPDIR", "")
    return Path(chosen) if chosen else Path(tempfile.gettempdir())


@contextlib.contextmanager
def run_directory() -> Iterator[Path]:
    """A new run directory (its owner recorded), removed when the run ends; stale ones of dead
    runs are removed first. Raises `RunError` naming the path when it cannot be written."""
    root = _root()
    clean_stale(root)
    try:
        path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=root))
    except OSError as error:
        raise RunError(_unwritable(root, error)) from error
    try:
        try:
            record = json.dumps({"pid": os.getpid(), "host": _host()})
            (path / OWNER).write_text(record)
        except OSError as error:
            raise RunError(_unwritable(path, error)) from error
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _unwritable(path: Path, error: OSError) -> str:
    if error.errno in FULL:
        return full_disk_message(path, error)
    reason = error.strerror or type(error).__name__
    return (
        f"the temporary directory {path} cannot be written ({reason}): the run keeps its "
        "workers' output there; set TMPDIR to a writable directory"
    )
