"""Reports as one matrix: a row per port per report, grouped by machine, versions and device.

Versions: a report's are its ports' (`versions`: distribution -> version). Reports join one
version set (`V1`, `V2`, ...) when every distribution they both name is at the same version
(a report joins the first set it agrees with); only where there are several does a group's
title name its set, `M1 · V2 · cpu`. Rows of one port at different versions are then in
different groups, and never a conflict: that they differ is what a version sweep shows."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..running.suite import SCHEMA
from .read import Source

NOT_RECORDED = "machine not recorded"


@dataclass
class Row:
    """One port as one report saw it (`source`: the report's number)."""

    port: str
    framework: str
    state: str
    source: int
    outcomes: dict[str, dict[str, Any]]  # property key -> the report's outcome
    seconds: float = 0.0
    reason: str = ""
    conflict: list[str] = field(default_factory=list)  # what differs from its twins' rows


@dataclass
class Group:
    """The rows of one machine (`machine`: its id, "M1"), one version set (`versions`: its
    id, "V2", or "" when every report is at the same versions) and one device."""

    machine: str
    device: str
    rows: list[Row] = field(default_factory=list)
    versions: str = ""

    @property
    def title(self) -> str:
        middle = f" · {self.versions}" if self.versions else ""
        return f"{self.machine}{middle} · {self.device}"


@dataclass(frozen=True)
class Conflict:
    """One port on one machine and device, with statuses that differ between reports."""

    port: str
    group: str  # the group's title
    differs: tuple[str, ...]  # property keys, and "state" when the port's states differ
    sources: tuple[int, ...]


@dataclass
class Merged:
    """Everything `merge` shows: the reports, their machines, the groups, the conflicts."""

    sources: list[Source]
    machines: dict[str, str]  # id ("M1") -> description
    machine_of: dict[int, str]  # report number -> machine id
    groups: list[Group]
    properties: dict[str, str]  # key -> title, every report's, in key order
    conflicts: list[Conflict]
    versions: dict[str, dict[str, str]] = field(default_factory=dict)  # "V1" -> its versions
    versions_of: dict[int, str] = field(default_factory=dict)  # report number -> "V1"

    @property
    def failed(self) -> bool:
        return any(source.failed for source in self.sources)


def describe_machine(fields: dict[str, Any]) -> str:
    """A machine in one line; two reports whose lines are equal ran on the same machine."""
    if not fields:
        return NOT_RECORDED
    memory = fields.get("memory_bytes")
    gib = f"{memory / 2**30:.0f} GiB" if isinstance(memory, (int, float)) else "memory ?"
    system = fields.get("os") or fields.get("system") or "?"
    return " · ".join(
        [
            f"{system} {fields.get('architecture') or '?'}",
            str(fields.get("cpu") or "cpu ?"),
            f"{fields.get('cores') or '?'} cores",
            gib,
            f"Python {fields.get('python') or '?'}",
        ]
    )


def describe_device(port: dict[str, Any]) -> str:
    """What a port computed on: "cpu", "gpu NVIDIA A100-SXM4-40GB", "tpu TPU v4", ..."""
    if port.get("state", "available") != "available":
        return "not loaded"
    device = (port.get("environment") or {}).get("device") or {}
    kind = device.get("kind")
    if not kind:
        return "device not recorded"
    name = device.get("name") or ""
    return kind if kind == "cpu" or name in ("", kind) else f"{kind} {name}"


def report_versions(source: Source) -> dict[str, str]:
    """A report's versions: every loaded port's distributions and their versions."""
    found: dict[str, str] = {}
    for port in source.ports:
        if port.get("state", "available") == "available":
            found.update({str(k): str(v) for k, v in (port.get("versions") or {}).items()})
    return found


def version_sets(sources: list[Source]) -> tuple[dict[str, dict[str, str]], dict[int, str]]:
    """The reports' version sets ("V1" -> versions) and each report's set: a report joins
    the first set whose versions agree with its own on every distribution both name."""
    sets: dict[str, dict[str, str]] = {}
    of: dict[int, str] = {}
    for source in sources:
        own = report_versions(source)
        for name, versions in sets.items():
            if all(versions[k] == v for k, v in own.items() if k in versions):
                versions.update(own)
                of[source.number] = name
                break
        else:
            name = f"V{len(sets) + 1}"
            sets[name] = dict(own)
            of[source.number] = name
    return sets, of


def combine(sources: list[Source]) -> Merged:
    """The reports as groups of rows, with every conflict found."""
    machines: dict[str, str] = {}  # description -> id
    machine_of: dict[int, str] = {}
    versions, versions_of = version_sets(sources)
    groups: dict[tuple[str, str, str], Group] = {}
    for source in sources:
        description = describe_machine(source.machine)
        machine = machines.setdefault(description, f"M{len(machines) + 1}")
        machine_of[source.number] = machine
        named = versions_of[source.number] if len(versions) > 1 else ""
        for port in source.ports:
            key = (machine, named, describe_device(port))
            group = groups.setdefault(key, Group(machine, key[2], versions=named))
            group.rows.append(_row(port, source.number))
    for group in groups.values():
        order = {}
        for row in group.rows:
            order.setdefault(row.port, len(order))
        group.rows.sort(key=lambda row: (order[row.port], row.source))  # twins side by side
    conflicts = [c for group in groups.values() for c in _conflicts(group)]
    titles: dict[str, str] = {}
    for source in sources:
        titles.update(source.data.get("properties") or {})
    for source in sources:
        for port in source.ports:
            for outcome in port["outcomes"]:
                titles.setdefault(outcome["property"], outcome["property"])
    return Merged(
        sources=list(sources),
        machines={number: description for description, number in machines.items()},
        machine_of=machine_of,
        groups=list(groups.values()),
        properties=dict(sorted(titles.items())),
        conflicts=conflicts,
        versions=versions,
        versions_of=versions_of,
    )


def _row(port: dict[str, Any], source: int) -> Row:
    return Row(
        port=port["name"],
        framework=str(port.get("framework") or ""),
        state=str(port.get("state") or "available"),
        source=source,
        outcomes={o["property"]: o for o in port["outcomes"]},
        seconds=_number(port.get("seconds")),
        reason=str(port.get("reason") or ""),
    )


def _conflicts(group: Group) -> list[Conflict]:
    """Mark the rows of one port whose statuses differ (only properties both ran count).

    Linear in rows: one pass gathers each port's twins (a scan per port was quadratic:
    45,000 ports took minutes)."""
    twins_of: dict[str, list[Row]] = {}
    for row in group.rows:
        twins_of.setdefault(row.port, []).append(row)
    found = []
    for name, twins in twins_of.items():
        if len(twins) < 2:
            continue  # one row differs from nothing
        differs = []
        if len({row.state for row in twins}) > 1:
            differs.append("state")
        keys = sorted({key for row in twins for key in row.outcomes})
        for key in keys:
            statuses = {row.outcomes[key]["status"] for row in twins if key in row.outcomes}
            if len(statuses) > 1:
                differs.append(key)
        if differs:
            for row in twins:
                row.conflict = list(differs)
            sources = tuple(row.source for row in twins)
            found.append(Conflict(name, group.title, tuple(differs), sources))
    return found


def _number(value: Any) -> float:
    # The JSON convention spells non-finite floats as strings ("inf", "nan").
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def to_json(merged: Merged) -> dict[str, Any]:
    """The merged matrix as plain data (its fields: docs/REPORT.md, "merge --json")."""
    return {
        "kind": "merge",
        "schema": SCHEMA,
        "failed": merged.failed,
        "properties": merged.properties,
        "machines": {
            number: {"description": description, "fields": _fields_of(merged, number)}
            for number, description in merged.machines.items()
        },
        "versions": merged.versions,
        "reports": [
            {
                "number": source.number,
                "path": source.path,
                "schema": source.data["schema"],
                "failed": source.failed,
                "verdict": source.verdict,
                "profile": source.data.get("profile"),
                "max_examples": source.data.get("max_examples"),
                "machine": merged.machine_of[source.number],
                "versions": merged.versions_of.get(source.number, ""),
                "ports": [port["name"] for port in source.ports],
                "mutation_score": source.data.get("mutation_score"),
                "canonical_failure": source.data.get("canonical_failure") or "",
            }
            for source in merged.sources
        ],
        "groups": [
            {
                "machine": group.machine,
                "versions": group.versions,
                "device": group.device,
                "rows": [
                    {
                        "port": row.port,
                        "framework": row.framework,
                        "state": row.state,
                        "report": row.source,
                        "conflict": row.conflict,
                        "outcomes": {
                            key: {k: o.get(k) for k in ("status", "examples", "worst_ratio")}
                            for key, o in row.outcomes.items()
                        },
                        "seconds": row.seconds,
                    }
                    for row in group.rows
                ],
            }
            for group in merged.groups
        ],
        "conflicts": [
            {
                "port": c.port,
                "group": c.group,
                "differs": list(c.differs),
                "reports": list(c.sources),
            }
            for c in merged.conflicts
        ],
        "failures": failures(merged),
    }


def _fields_of(merged: Merged, machine: str) -> dict[str, Any]:
    for source in merged.sources:
        if merged.machine_of[source.number] == machine:
            return source.machine
    return {}


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
