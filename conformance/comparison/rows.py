"""Extra rows of `compare`: a framework's process-wide mode that is not a suite port
(MindSpore's graph mode), declared by its stack's manifest (`RowEntry`).

A row is a port-like object (`forward`, `vjp`, `nn_checkpoint_forward`,
`backward_record`, `versions`, `matmul_precision`) measured as a port is,
without policy cells, in a lane (a process) of its own since its mode is
process-wide; its first call is timed in a fresh process as a port's is.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

from implementations import manifests
from implementations.installing import install_command
from implementations.manifests import RowEntry


def declared() -> dict[str, tuple[manifests.Manifest, RowEntry]]:
    """Every stack's extra rows by name, with their stack's manifest."""
    return {row.name: (m, row) for m in manifests.manifests() for row in m.rows}


def wanted(names: Sequence[str] | None) -> list[RowEntry]:
    """The rows a comparison of `names` (None: the default set) includes: a row is wanted by
    name, or by a port or stack its entry names."""
    return [
        row
        for _, row in declared().values()
        if not names or row.name in names or any(n in names for n in row.wanted_by)
    ]


def missing(name: str) -> str:
    """Why a row's framework cannot load here, read without importing it ("" when found)."""
    manifest, _ = declared()[name]
    for module in dict.fromkeys(m for p in manifest.ports for m in p.modules):
        if importlib.util.find_spec(module) is None:
            extra = manifest.ports[0].extra
            return f"{module} is not installed ({install_command(extra)})"
    return ""


def load(name: str) -> Any:
    """The row `name`, made now (its framework imported)."""
    _, row = declared()[name]
    return manifests.resolve(row.target)()
