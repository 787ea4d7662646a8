"""The versions sections of `python -m conformance report`: a sweep's matrix (its JSON, from
`versions --out`: `conformance.tables.kinds.versions.matrix`, the terminal's and Markdown's
own), its sets and degradations as tables, and the version sets of run reports made at
different versions (as `merge` groups them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..merge import Source, version_sets
from ..tables.kinds import versions as versions_tables
from ..tables.kinds.merge import describe_versions
from ..tables.kinds.versions import set_lines
from ..tables.model import Table
from .tables import _Builder


def sets(data: dict[str, Any]) -> Table:
    """What each version set was: installed, reused, released pins, or why not run."""
    table = _Builder(
        title="Version sets",
        header=["version set", "state", "what was done"],
        kind="version-sets",
    )
    lines = set_lines(data)
    found = [line for line in lines if not line.startswith("  note:")]
    for index, (vset, line) in enumerate(zip(data["sets"], found, strict=True)):
        state = "✗ " + vset["state"] if vset["failed"] else vset["state"]
        table.row(str(index), [vset["title"], state, line.split(": ", 1)[-1]])
    return table.build()


def degradations(data: dict[str, Any]) -> Table | None:
    """Each documented degradation across the sets, and the first version that differs."""
    if not data["degradations"]:
        return None
    table = _Builder(
        title="Documented degradations across versions",
        header=["degradation", "measured", *[s["title"] for s in data["sets"]], "first differs"],
        caption="holds: the degradation shows there, as documented; ✗ does not hold: the "
        "documented behaviour changed; blank: not probed there",
        kind="degradations",
    )
    for found in data["degradations"]:
        by_set = {r["set"]: r for r in found["results"]}
        cells = []
        for index in range(len(data["sets"])):
            result = by_set.get(index)
            if result is None:
                cells.append("")
            elif result["holds"] is None:
                cells.append(f"probe failed: {result['error']}")
            else:
                cells.append(
                    ("holds" if result["holds"] else "✗ does not hold") + ": " + result["seen"]
                )
        first = found["first_difference"]
        table.row(
            found["key"],
            [
                f"{found['family']} · {found['policy']}: {found['what']}",
                found["measured"],
                *cells,
                "none" if first is None else data["sets"][first]["title"],
            ],
        )
    return table.build()


def tables(data: dict[str, Any]) -> list[Table]:
    """A sweep's tables, in order: the matrix, its sets, its degradations."""
    found = [versions_tables.matrix(data), sets(data), degradations(data)]
    return [table for table in found if table is not None]


def run_versions(documents: Sequence[Any]) -> Table | None:
    """The version sets of the run reports, where there are several (as `merge` finds them)."""
    runs = [Source(i, d.source, d.data) for i, d in enumerate(documents, 1) if d.kind == "run"]
    found, of = version_sets(runs)
    if len(found) < 2:
        return None
    table = _Builder(
        title="Versions of the runs",
        header=["version set", "versions", "reports"],
        caption="Run reports whose ports' versions agree on every distribution both name "
        "share a set (as merge groups them)",
        kind="run-versions",
    )
    for name, versions in found.items():
        reports = ", ".join(s.path for s in runs if of[s.number] == name)
        table.row(name, [name, describe_versions(versions), reports])
    return table.build()
