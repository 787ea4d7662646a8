"""`merge` (and `run --markdown`), from `merge --json`'s document: many run reports as one
matrix, a heading row per machine, versions and device, one row per port and report; then
the machines, the version sets, the reports, the conflicts and the failures."""

from __future__ import annotations

from typing import Any

from ..model import Cell, Column, Document, Items, Paragraph, Section, Table, TableBuilder
from ..numbers import wall
from . import outcomes

CAPTION = (
    f"{outcomes.LEGEND} Under each port: its framework · #N, the report it comes from. time: "
    "that port's worker, start to finish. ⚠: reports disagree on this port, machine, "
    "versions and device. V1, V2: the version sets (listed below), where the reports' "
    "versions differ."
)


def describe_versions(versions: dict[str, str]) -> str:
    """A version set in one line: `flax 0.11.2, jax 0.7.0, jaxlib 0.7.0`."""
    return ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) or "no versions recorded"


def group_title(group: dict[str, Any]) -> str:
    """`M1 · cpu`, `M1 · V2 · gpu Apple M2`: a group's machine, version set and device."""
    middle = f" · {group['versions']}" if group.get("versions") else ""
    return f"{group['machine']}{middle} · {group['device']}"


def title(data: dict[str, Any]) -> str:
    reports = data["reports"]
    if len(reports) == 1:
        examples = reports[0].get("max_examples")
        examples = "the profile's" if examples is None else examples
        profile = reports[0].get("profile")
        return f"remat-conformance · profile {profile} · {examples} examples per property"
    passed = all(r.get("verdict", "passed") == "passed" for r in reports)
    verdict = "some failed" if data["failed"] else "all passed" if passed else "none failed"
    return f"remat-conformance · {len(reports)} reports merged · {verdict}"


def matrix(data: dict[str, Any]) -> Table:
    """One matrix: a heading row per machine and device, then its ports, one row per report."""
    keys = list(data["properties"])
    table = TableBuilder(
        title(data),
        [
            Column("port", wrap=True),  # wraps: a long device heading must not widen it
            *(Column(outcomes.column(key), "center") for key in keys),
            Column("time", "right", "seconds"),
        ],
        caption=f"{outcomes.names(keys)}. {CAPTION}",
        kind="merge",
    )
    for group in data["groups"]:
        table.heading(group_title(group))
        for row in group["rows"]:
            label = Cell(
                ("⚠ " if row["conflict"] else "") + row["port"],
                "warn" if row["conflict"] else "",
                note=f"{row['framework']} · #{row['report']}",
            )
            if row["state"] != "available":
                state = Cell(row["state"], "warn" if row["state"] == "unavailable" else "fail")
                table.add([label, *[outcomes.NOT_LOADED] * len(keys), state], key=row["port"])
                continue
            cells = [outcomes.cell(row["outcomes"].get(key)) for key in keys]
            table.add([label, *cells, f"{wall(row['seconds'])}s"], key=row["port"])
    return table.build()


def conflict_text(data: dict[str, Any], conflict: dict[str, Any]) -> str:
    rows = [
        r
        for g in data["groups"]
        if group_title(g) == conflict["group"]
        for r in g["rows"]
        if r["port"] == conflict["port"]
    ]
    parts = []
    for key in conflict["differs"]:
        if key == "state":
            said = ", ".join(f"{r['state']} in #{r['report']}" for r in rows)
        else:
            said = ", ".join(
                f"{r['outcomes'][key]['status']} in #{r['report']}"
                for r in rows
                if key in r["outcomes"]
            )
        parts.append(f"{key}: {said}")
    return f"{conflict['port']} on {conflict['group']}: " + "; ".join(parts)


def document(data: dict[str, Any]) -> Document:
    """From `merge --json`'s document: the matrix, then the machines, the version sets, the
    reports, the conflicts and the failures."""
    machines = data["machines"]
    blocks: list[Any] = [
        matrix(data),
        Items("Machines", tuple(f"{n}: {m['description']}" for n, m in machines.items())),
    ]
    if len(data.get("versions") or {}) > 1:
        lines = tuple(f"{n}: {describe_versions(v)}" for n, v in data["versions"].items())
        blocks.append(Items("Versions", lines))
    reports, marks = [], []
    for report in data["reports"]:
        score = report.get("mutation_score")
        mutants = f", mutants killed {score['killed']}/{score['total']}" if score else ""
        verdict = report.get("verdict") or ("failed" if report["failed"] else "passed")
        where = f"{report['machine']}{mutants}"
        reports.append(f"#{report['number']} {report['path']} ({where}): {verdict}")
        marks.append({"failed": "fail", "passed": "pass"}.get(verdict, "warn"))
    blocks.append(Items("Reports", tuple(reports), tuple(marks)))
    if data["conflicts"]:
        lines = tuple(f"⚠ {conflict_text(data, c)}" for c in data["conflicts"])
        blocks.append(Items("Conflicts", lines, ("warn",) * len(lines)))
    found = data.get("failures") or []
    if found:
        lines = tuple(f"✗ {line}" for line in found)
        blocks.append(Items("Failures", lines, ("fail",) * len(lines)))
    return Document("merge", "", (Section("", tuple(blocks)),))


def verdict(data: dict[str, Any]) -> Paragraph:
    """The merge's verdict in one line, a terminal's last: "The merge failed · 1 of 3
    reports failed (#2) · 1 conflict"."""
    reports = data["reports"]
    failed = [f"#{r['number']}" for r in reports if r["failed"]]
    parts = [f"The merge {'failed' if data['failed'] else 'passed'}"]
    if failed:
        parts.append(f"{len(failed)} of {len(reports)} reports failed ({', '.join(failed)})")
    else:
        parts.append(f"{len(reports)} report{'s' if len(reports) != 1 else ''}, each passed")
    parts.append(f"{len(data['machines'])} machine{'s' if len(data['machines']) != 1 else ''}")
    if data["conflicts"]:
        parts.append(
            f"{len(data['conflicts'])} conflicting port{'s' if len(data['conflicts']) != 1 else ''}"
        )
    return Paragraph(" · ".join(parts), "fail" if data["failed"] else "pass")
