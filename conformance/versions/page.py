"""The versions section of `python -m conformance report`: a sweep's matrix (its JSON, from
`versions --out`), and the version sets of run reports made at different versions.

Tables of plain strings (`conformance.page.tables.Table`), as the report's other sections
have; `conformance.page.sections` places them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..page.tables import Table, outcome_cell
from ..terminal.markdown import plain as _plain
from . import render


def matrix(data: dict[str, Any]) -> Table:
    """Port x version set: the properties, then the policies."""
    keys = list(data["properties"])
    policies = data["policies"] if any(r.get("policies") for r in data["rows"]) else []
    table = Table(
        title=render.title(data),
        header=[
            "version set",
            "port",
            "versions",
            *[f"({k.split('_', 1)[0]}) {k.split('_', 1)[-1]}" for k in keys],
            *policies,
            "seconds",
        ],
        caption=render.CAPTION,
        kind="versions",
    )
    for row in data["rows"]:
        title = data["sets"][row["set"]]["title"]
        key = f"{row['set']}-{row['port'] or 'set'}"
        if not row["port"]:
            blank = [""] * (len(keys) + len(policies) + 1)
            table.add(key, [title, "", f"{row['state']}: {row['reason']}", *blank])
            continue
        versions = ", ".join(f"{k} {v}" for k, v in (row.get("versions") or {}).items())
        if row["state"] != "available":
            blank = [""] * (len(keys) + len(policies) + 1)
            table.add(key, [title, row["port"], f"{row['state']}: {row['reason']}", *blank])
            continue
        cells = [outcome_cell(row["outcomes"][k]) if k in row["outcomes"] else "" for k in keys]
        cells += [_plain(render.policy_cell(row["policies"].get(p))) for p in policies]
        seconds = f"{row.get('seconds') or 0:.0f}"
        table.add(key, [title, row["port"], versions, *cells, seconds])
    return table


def sets(data: dict[str, Any]) -> Table:
    """What each version set was: installed, reused, released pins, or why not run."""
    table = Table(
        title="Version sets",
        header=["version set", "state", "what was done"],
        kind="version-sets",
    )
    lines = render.set_lines(data)
    found = [line for line in lines if not line.startswith("  note:")]
    for index, (vset, line) in enumerate(zip(data["sets"], found, strict=True)):
        state = "✗ " + vset["state"] if vset["failed"] else vset["state"]
        table.add(str(index), [vset["title"], state, line.split(": ", 1)[-1]])
    return table


def degradations(data: dict[str, Any]) -> Table | None:
    """Each documented degradation across the sets, and the first version that differs."""
    if not data["degradations"]:
        return None
    table = Table(
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
        table.add(
            found["key"],
            [
                f"{found['family']} · {found['policy']}: {found['what']}",
                found["measured"],
                *cells,
                "none" if first is None else data["sets"][first]["title"],
            ],
        )
    return table


def tables(data: dict[str, Any]) -> list[Table]:
    """A sweep's tables, in order."""
    found = [matrix(data), sets(data), degradations(data)]
    return [table for table in found if table is not None]


def run_versions(documents: Sequence[Any]) -> Table | None:
    """The version sets of the run reports, where there are several (as `merge` finds them)."""
    from ..merge import Source, version_sets
    from ..merge.render import describe_versions

    runs = [Source(i, d.source, d.data) for i, d in enumerate(documents, 1) if d.kind == "run"]
    found, of = version_sets(runs)
    if len(found) < 2:
        return None
    table = Table(
        title="Versions of the runs",
        header=["version set", "versions", "reports"],
        caption="Run reports whose ports' versions agree on every distribution both name "
        "share a set (as merge groups them)",
        kind="run-versions",
    )
    for name, versions in found.items():
        reports = ", ".join(s.path for s in runs if of[s.number] == name)
        table.add(name, [name, describe_versions(versions), reports])
    return table
