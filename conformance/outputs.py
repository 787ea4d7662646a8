"""Every file the project writes goes through here: atomic, never through a symlink, never
over an input.

- `replacing(path)`: a temporary file beside `path`, renamed over it once complete, so that a
  full disk (or a crash) leaves the old file or none, never a truncated one that looks
  finished; the rename replaces a symlink at `path`, it never writes into its target.
- `write_text`, `write_bytes`: the same for data in hand.
- `check_paths`: a command's outputs before anything runs: none is a symlink (one to a
  stream, /dev/stdout, is fine), none is one of the command's inputs, no two share a path
  (`OutputError` names the argument). A symlink is refused, never followed.
- `say_side_output_failed`: a side output (`--markdown`, `--csv`) that could not be written,
  said beside the verdict, whose exit code is kept.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: What a new file's mode would be (mkstemp's own 0600 would hide a report from its group).
FILE_MODE = 0o666 & ~_umask()


class OutputError(ValueError):
    """An output path a command must not write: the message names the argument."""


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path beside `path` to write; renamed over `path` when the block ends
    without an error, removed when it raises. A `path` that is a stream (a device, a fifo)
    is itself written: renaming over it would replace the device."""
    path = Path(path)
    if path.exists() and not path.is_file():  # /dev/stdout, a fifo: a stream, written in place
        yield path
        return
    descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(descriptor)
    temporary = Path(name)
    try:
        yield temporary
        _sync(temporary)  # a full disk can show only here: before the rename, never after
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _sync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_bytes(path: str | Path, data: bytes) -> None:
    """`data` in `path`, whole or not at all."""
    with replacing(path) as temporary, open(temporary, "wb") as file:
        file.write(data)


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """`text` in `path`, whole or not at all."""
    write_bytes(path, text.encode(encoding))


def check_paths(outputs: dict[str, str | Path | None], inputs: Iterable[str | Path] = ()) -> None:
    """Refuse an output (flag -> path) that is a symlink, one of `inputs`, or another
    output's path; `OutputError` names the flag."""
    taken: dict[Path, str] = {}
    given = {_identity(Path(p)): Path(p) for p in inputs}
    for flag, path in outputs.items():
        if path is None:
            continue
        path = Path(path)
        if path.is_symlink() and (path.is_file() or path.is_dir() or not path.exists()):
            raise OutputError(
                f"{flag}: {path} is a symlink: outputs never write through one "
                "(give the target's own path, or remove the link)"
            )
        identity = _identity(path)
        if identity in given:
            raise OutputError(
                f"{flag}: {path} is one of this command's inputs "
                f"({given[identity]}): it would be replaced"
            )
        if identity in taken:
            raise OutputError(f"{flag}: {path} is also {taken[identity]}'s path")
        taken[identity] = flag


def _identity(path: Path) -> Path:
    # The same file however it is spelled (relative, through symlinked directories).
    return path.resolve()


def say_side_output_failed(prog: str, flag: str, path: Path, error: OSError, verdict: int) -> None:
    """Print that `flag`'s file could not be written, and that the verdict's code stands."""
    reason = error.strerror or str(error)
    words = {0: "passed", 1: "failed", 5: "nothing checked"}.get(verdict, f"exit {verdict}")
    print(
        f"{prog}: error: {flag}: cannot write {path}: {reason}; "
        f"the verdict stands: {words} (exit {verdict})",
        file=sys.stderr,
    )
