"""Plain paths for the frameworks whose tools cannot take others.

Some framework caches end up on a tool's command line unquoted: with `TMPDIR` in a directory
whose name held a space, a compiler read one path as two ("input file '.../sp' is the same
as output file") and the port failed; a `REMAT_CACHE` holding an apostrophe failed the same
way. A stack's manifest says so of its cache (`CacheEntry.plain_paths`), and the suite then
gives that cache, and the process's temporary directory, a plain path where theirs is not:
a directory under a plain root (`/tmp`, else `/var/tmp`, neither a symlink), named by a
hash of the path it stands in for (so a later run finds the same cache), made for this user
alone. Each move comes with a line for the user (`environment.prepare` warns it). Where no
plain root can be written, the path stays as it is (with a warning): the port may then fail,
as it would have.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

#: The characters a plain path is made of: no space, quote, or anything a shell reads.
_PLAIN = re.compile(r"[A-Za-z0-9._/+=@%,:-]+")
ROOTS = ("/tmp", "/var/tmp")


def plain(path: Path | str) -> bool:
    """Whether `path` is made of plain characters only."""
    return _PLAIN.fullmatch(str(path)) is not None


def _root() -> Path | None:
    for root in ROOTS:
        real = os.path.isdir(root) and os.path.realpath(root) == root
        if plain(root) and real and os.access(root, os.W_OK | os.X_OK):
            return Path(root)
    return None


def stand_in(path: Path, what: str) -> tuple[Path, str]:
    """`path` where it is plain, else a plain directory standing in for it (made, and this
    user's alone); with a line saying so, or why there is none (`what` names it; "": plain)."""
    if plain(path):
        return path, ""
    root = _root()
    if root is None:
        return path, f"{what}: {path} is not a plain path, and no plain place was found"
    user = os.getuid() if hasattr(os, "getuid") else 0
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    folder = re.sub(r"[^A-Za-z0-9._-]", "-", path.name)[:40]
    chosen = root / f"remat-conformance-{user}-{folder}-{digest}"
    try:
        chosen.mkdir(mode=0o700, exist_ok=True)
        owned = chosen.lstat()
        if chosen.is_symlink() or (hasattr(os, "getuid") and owned.st_uid != os.getuid()):
            raise PermissionError(f"{chosen} is not this user's own directory")
    except OSError as error:
        return path, f"{what}: {path} is not a plain path, and {chosen} is unusable: {error}"
    said = f"{what}: {path} holds a space or a quote, which its tools cannot take: {chosen} "
    return chosen, said + "stands in for it"


def plain_temporary_directory() -> str:
    """Point this process's temporary files (`TMPDIR`, and Python's own choice) at a plain
    directory where the current one is not; the line saying so ("": nothing moved)."""
    current = Path(tempfile.gettempdir())
    chosen, said = stand_in(current, "the temporary directory")
    if chosen != current:
        os.environ["TMPDIR"] = str(chosen)
        tempfile.tempdir = None  # chosen again, from TMPDIR, at the next call
    return said
