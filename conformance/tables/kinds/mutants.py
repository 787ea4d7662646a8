"""A run's mutants as the page shows them: the mutation score in one line, rows only for the
mutants not killed, the killed ones one click away (`run.mutants` is the full table)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..model import Paragraph, Table
from . import run as run_tables


def page_blocks(run: Mapping[str, Any]) -> list[Table | Paragraph]:
    """The mutation score in one line; a row for each mutant not killed (survived, crashed,
    timed out); the ones that could not run named in one line; the killed ones one click
    away. Empty without a mutation run."""
    found = run.get("mutants")
    full = run_tables.mutants(dict(run))
    if found is None or full is None:
        return []
    counted = [m for m in found if m["status"] != "unavailable"]
    killed = [m for m in counted if m["status"] == "killed"]
    missed = [m for m in counted if m["status"] != "killed"]
    score = f"Mutation score: {len(killed)}/{len(counted)} killed"
    blocks: list[Table | Paragraph] = []
    if missed:
        said = ", ".join(f"{m['name']} {m['status']}" for m in missed)
        blocks.append(Paragraph(f"{score} · not killed: {said}", "fail"))
        blocks.append(_only(full, {m["name"] for m in missed}, "Mutants not killed", False))
    else:
        blocks.append(Paragraph(f"{score}: each rejected by a property", "pass"))
    unavailable = [m["name"] for m in found if m["status"] == "unavailable"]
    if unavailable:
        blocks.append(
            Paragraph(
                f"{len(unavailable)} not run (their port did not load; not counted): "
                + ", ".join(unavailable)
            )
        )
    if killed:
        blocks.append(
            _only(full, {m["name"] for m in killed}, f"The {len(killed)} killed mutants", True)
        )
    return blocks


def _only(table: Table, keys: set[str], title: str, collapsed: bool) -> Table:
    rows = tuple(r for r in table.rows if r.key in keys)
    return replace(table, title=title, rows=rows, collapsed=collapsed)
