"""The command that installs an extra, as this package was installed.

The package is not on PyPI: from a clone it is installed editable (`pip install -c
constraints.txt -e '.[all]'`), and an extra is added the same way, in that clone, with its
constraints (without them a looser torch pulls a multi-GB CUDA build). A package installed
from a wheel or a source archive gets the plain `pip install 'remat-conformance[extra]'`.
"""

from __future__ import annotations

import functools
import shlex
from pathlib import Path

DISTRIBUTION = "remat-conformance"
CONSTRAINTS = "constraints.txt"


@functools.cache
def clone() -> Path | None:
    """The source tree this package runs from (an editable install, or a clone on the path):
    the directory above it holds the project's `pyproject.toml`. None for a normal install,
    whose files sit in site-packages. (The package's files tell, not pip's metadata: an
    editable install leaves an egg-info without `direct_url.json` in the clone, which a
    command run from the clone finds first.)"""
    tree = Path(__file__).resolve().parents[1]
    try:
        project = (tree / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return tree if f'name = "{DISTRIBUTION}"' in project else None


def install_command(extra: str) -> str:
    """The pip command that adds `extra` (an extra's name, or several joined by commas)."""
    tree = clone()
    if tree is None:
        return f"pip install '{DISTRIBUTION}[{extra}]'"
    pinned = f"-c {CONSTRAINTS} " if (tree / CONSTRAINTS).is_file() else ""
    return f"cd {shlex.quote(str(tree))} && pip install {pinned}-e '.[{extra}]'"
