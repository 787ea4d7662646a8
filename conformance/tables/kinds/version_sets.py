"""The versions tables of `python -m conformance report`: a sweep's matrix (its JSON, from
`versions --out`: `versions.matrix`, the terminal's and Markdown's own), its sets and
degradations, and the version sets of run reports made at different versions (as `merge`
groups them: `conformance.merge.version_sets`, which the page calls)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import Table
from . import versions as versions_tables
from .merge import describe_versions
from .plain import PlainBuilder
from .versions import set_lines


def sets(data: dict[str, Any]) -> Table:
    """What each version set was: installed, reused, released pins, or why not run."""
    table = PlainBuilder(
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
    table = PlainBuilder(
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


def run_versions(found: Mapping[str, Any], reports: Mapping[str, list[str]]) -> Table | None:
    """The version sets of the run reports, where there are several. `found`: set name ->
    its versions, `reports`: set name -> the reports in it (`merge.version_sets`)."""
    if len(found) < 2:
        return None
    table = PlainBuilder(
        title="Versions of the runs",
        header=["version set", "versions", "reports"],
        caption="Run reports whose ports' versions agree on every distribution both name "
        "share a set (as merge groups them)",
        kind="run-versions",
    )
    for name, versions in found.items():
        table.row(name, [name, describe_versions(versions), ", ".join(reports.get(name, []))])
    return table.build()
