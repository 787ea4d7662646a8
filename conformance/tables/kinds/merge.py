"""`merge` (and `run --markdown`): many run reports as one matrix, a heading row per
machine, versions and device, one row per port and report; then the machines, the version
sets, the reports, the conflicts and the failures."""

from __future__ import annotations

from typing import Any

from ...merge.combine import Merged
from ..model import Cell, Column, Document, Items, Section, Table, TableBuilder
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


def title(merged: Merged) -> str:
    if len(merged.sources) == 1:
        data = merged.sources[0].data
        examples = data.get("max_examples")
        examples = "the profile's" if examples is None else examples
        return (
            f"remat-conformance · profile {data.get('profile')} · {examples} examples per property"
        )
    verdict = "some failed" if merged.failed else "all passed"
    return f"remat-conformance · {len(merged.sources)} reports merged · {verdict}"


def matrix(merged: Merged) -> Table:
    """One matrix: a heading row per machine and device, then its ports, one row per report."""
    keys = list(merged.properties)
    table = TableBuilder(
        title(merged),
        [
            Column("port", wrap=True),  # wraps: a long device heading must not widen it
            *(Column(outcomes.column(key), "center") for key in keys),
            Column("time", "right", "seconds"),
        ],
        caption=f"{outcomes.names(keys)}. {CAPTION}",
        kind="merge",
    )
    for group in merged.groups:
        table.heading(group.title)
        for row in group.rows:
            label = Cell(
                ("⚠ " if row.conflict else "") + row.port,
                "warn" if row.conflict else "",
                note=f"{row.framework} · #{row.source}",
            )
            if row.state != "available":
                state = Cell(row.state, "warn" if row.state == "unavailable" else "fail")
                table.add([label, *[outcomes.NOT_LOADED] * len(keys), state], key=row.port)
                continue
            cells = [outcomes.cell(row.outcomes.get(key)) for key in keys]
            table.add([label, *cells, f"{wall(row.seconds)}s"], key=row.port)
    return table.build()


def _mutants(source) -> str:
    score = source.data.get("mutation_score")
    return f", mutants killed {score['killed']}/{score['total']}" if score else ""


def conflict_text(merged: Merged, conflict) -> str:
    rows = [r for g in merged.groups if g.title == conflict.group for r in g.rows]
    rows = [r for r in rows if r.port == conflict.port]
    parts = []
    for key in conflict.differs:
        if key == "state":
            said = ", ".join(f"{r.state} in #{r.source}" for r in rows)
        else:
            said = ", ".join(
                f"{r.outcomes[key]['status']} in #{r.source}" for r in rows if key in r.outcomes
            )
        parts.append(f"{key}: {said}")
    return f"{conflict.port} on {conflict.group}: " + "; ".join(parts)


def failures(merged: Merged) -> list[str]:
    """One line per failure: what failed, in which report, its message's first line, replay."""
    lines = []
    for source in merged.sources:
        if source.data.get("canonical_failure"):
            first = source.data["canonical_failure"].splitlines()[0]
            lines.append(f"#{source.number}: the canonical port failed: {first}")
        for port in source.ports:
            state = port.get("state", "available")
            if state not in ("available", "unavailable"):
                reason = (str(port.get("reason") or "").splitlines() or [""])[0]
                lines.append(f"#{source.number} {port['name']}: {state}: {reason}")
            for outcome in port["outcomes"]:
                if outcome["status"] in ("fail", "crashed", "timeout"):
                    first = (str(outcome.get("message") or "").splitlines() or [""])[0]
                    replay = outcome.get("replay")
                    tail = f" (replay: {replay})" if replay else ""
                    heading = f"#{source.number} {port['name']} · {outcome['property']}"
                    lines.append(f"{heading}: {outcome['status']}: {first}{tail}")
        for mutant in source.data.get("mutants") or []:
            status = mutant.get("status")
            if status not in ("killed", "unavailable"):
                lines.append(f"#{source.number} mutant {mutant.get('name')}: {status}")
    return lines


def document(merged: Merged) -> Document:
    """The matrix, then the machines, the version sets, the reports, conflicts, failures."""
    blocks: list[Any] = [
        matrix(merged),
        Items("Machines", tuple(f"{n}: {d}" for n, d in merged.machines.items())),
    ]
    if len(merged.versions) > 1:
        lines = tuple(f"{n}: {describe_versions(v)}" for n, v in merged.versions.items())
        blocks.append(Items("Versions", lines))
    reports, marks = [], []
    for source in merged.sources:
        machine = merged.machine_of[source.number]
        verdict = "failed" if source.failed else "passed"
        reports.append(f"#{source.number} {source.path} ({machine}{_mutants(source)}): {verdict}")
        marks.append("fail" if source.failed else "pass")
    blocks.append(Items("Reports", tuple(reports), tuple(marks)))
    if merged.conflicts:
        lines = tuple(f"⚠ {conflict_text(merged, c)}" for c in merged.conflicts)
        blocks.append(Items("Conflicts", lines, ("warn",) * len(lines)))
    found = failures(merged)
    if found:
        lines = tuple(f"✗ {line}" for line in found)
        blocks.append(Items("Failures", lines, ("fail",) * len(lines)))
    return Document("merge", "", (Section("", tuple(blocks)),))
