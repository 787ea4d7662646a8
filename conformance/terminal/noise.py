"""What frameworks print as they load and run (TensorFlow's oneDNN and absl lines, DeepSpeed's
accelerator line, MindSpore's and Paddle's logs) is kept out of the user's terminal.

The commands that load frameworks in this process (`FRAMEWORK_COMMANDS`) run inside `kept`:
file descriptors 1 and 2, where native code writes, point at a log file, while `sys.stdout`
and `sys.stderr` are copies of the user's, so the command's own output still reaches them.
A framework's Python-level prints go to `sink()` (the log too). `--verbose` shows everything
as it comes; a command that fails shows the log's last lines; the log is always removed. A
run's workers keep their output already, per port (`conformance.running.worker.printing_to`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

#: The commands that import frameworks in this process.
FRAMEWORK_COMMANDS = frozenset({"bench", "compare", "plan", "vectors"})
#: The log's last lines a failed command shows.
TAIL = 20

_sink: TextIO | None = None


def _on_descriptor(stream: TextIO, descriptor: int) -> bool:
    """Whether `stream` writes to the process's file descriptor `descriptor`."""
    try:
        return stream.fileno() == descriptor
    except (AttributeError, OSError, ValueError):  # io.StringIO and the like: no descriptor
        return False


def sink() -> TextIO:
    """Where a framework's Python-level output goes: the log while one is kept, else stderr."""
    return _sink if _sink is not None else sys.stderr


@contextlib.contextmanager
def kept(verbose: bool = False) -> Iterator[Path | None]:
    """Run the block with native and framework output in a log (None with `verbose`)."""
    global _sink
    if verbose:
        yield None
        return
    handle, name = tempfile.mkstemp(prefix="remat-framework-output-", suffix=".log")
    path = Path(name)
    _flush()
    saved = [os.dup(1), os.dup(2)]
    streams = (sys.stdout, sys.stderr)
    # Python's own streams keep writing where they did; a caller's stream (a StringIO from
    # redirect_stdout) is not a descriptor and stays as it is.
    if _on_descriptor(sys.stdout, 1):
        sys.stdout = os.fdopen(os.dup(saved[0]), "w", buffering=1, encoding="utf-8")
    if _on_descriptor(sys.stderr, 2):
        sys.stderr = os.fdopen(os.dup(saved[1]), "w", buffering=1, encoding="utf-8")
    _sink = os.fdopen(os.dup(handle), "w", buffering=1, encoding="utf-8", errors="replace")
    for descriptor in (1, 2):
        os.dup2(handle, descriptor)
    os.close(handle)
    failed = True
    try:
        yield path
        failed = False
    finally:
        _flush()
        for stream in {_sink, sys.stdout, sys.stderr} - set(streams):  # only the ones made here
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to lose
                stream.close()
        _sink = None
        sys.stdout, sys.stderr = streams
        for descriptor, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, descriptor)
            os.close(copy)
        if failed:  # stopped by an exception (a signal, a crash): what they printed may say why
            with contextlib.suppress(OSError):
                show_tail(path)
        path.unlink(missing_ok=True)  # nothing left in the temporary directory


def show_tail(path: Path | None, file: TextIO | None = None) -> None:
    """After a failure: the log's last lines."""
    if path is None:
        return
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines:
        return
    target = file or sys.stderr
    shown = lines[-TAIL:]
    more = f" (the last {len(shown)} of {len(lines)} lines)" if len(lines) > len(shown) else ""
    print(f"what the frameworks printed{more}; --verbose shows it live:", file=target)
    for line in shown:
        print(f"  | {line}", file=target)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr, _sink):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
