"""The truncated normal's lookup table kept on disk, between processes. Standard library and numpy.

With `$REMAT_INIT_TABLES` (`TABLES_ENV`) naming a directory (the suite sets
it to its cache), `sampling._half_table` keeps the table it builds there, as
`half-table-<bound>-<source>.npy` next to the SHA-256 of its contents
(`.sha256`), which a later process checks when it reads the table: a damaged
file costs a rebuild, never a wrong init.

`<source>` is a digest of the source of the modules that decide what the
table holds or how it is stored (`_SOURCES`: `xla_math`, `sampling`, this
one), so that a change to any of them makes a new file, and a change
elsewhere (the PRNG in `threefry`, the Flax pipeline in `init`) keeps it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np

TABLES_ENV = "REMAT_INIT_TABLES"

# The modules whose source names the table's file: every function the table's values
# come from (the float32 maths, the truncated normal, the build) and this file's format.
_SOURCES = ("xla_math.py", "sampling.py", "tables.py")


def _table_file(bound: float) -> Path | None:
    directory = os.environ.get(TABLES_ENV, "")
    if not directory:
        return None
    return Path(directory) / f"half-table-{bound!r}-{_source_digest()}.npy"


def _source_digest() -> str:
    """16 hex digits of the SHA-256 of the `_SOURCES`' own digests, in order."""
    digest = hashlib.sha256()
    for name in _SOURCES:
        digest.update(hashlib.sha256((Path(__file__).parent / name).read_bytes()).digest())
    return digest.hexdigest()[:16]


def _read_table(path: Path, size: int) -> np.ndarray | None:
    """The kept table, or None if it is missing, unreadable, or not what was written: a damaged
    cache must cost time, never become a wrong init (a single flipped bit would)."""
    try:
        table = np.load(path)
        written = _digest_file(path).read_text().strip()
    except (OSError, ValueError):
        return None
    if table.shape != (size,) or table.dtype != np.float32 or _digest(table) != written:
        return None
    table.flags.writeable = False
    return table


def _write_table(path: Path, table: np.ndarray) -> None:
    # Each file written whole under a temporary name, then renamed, the digest first: a
    # reader sees all of the table or none, and checks it against the digest.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, write in (
            (_digest_file(path), lambda file: file.write(_digest(table).encode())),
            (path, lambda file: np.save(file, table)),
        ):
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as file:
                write(file)
            os.replace(file.name, target)
    except OSError:
        pass  # an unwritable cache costs time, never a result


def _digest_file(path: Path) -> Path:
    return path.with_suffix(".sha256")


def _digest(table: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(table).tobytes()).hexdigest()
