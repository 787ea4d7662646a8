"""A sweep as data (`to_json`, its fields in docs/VERSIONS.md): the sets, one row per port per
set, and each documented degradation across the sets, with the first set that differs from
the documented behaviour and every change between neighbouring sets."""

from __future__ import annotations

import itertools
from typing import Any

from ..checking.properties import PROPERTIES
from ..running import machine
from . import project
from .sweep import POLICIES, SCHEMA, SetResult, Sweep, degradation_key


def to_json(sweep: Sweep) -> dict[str, Any]:
    plan, options = sweep.plan, sweep.options
    return {
        "kind": "versions",
        "schema": SCHEMA,
        "extra": plan.extra,
        "distributions": plan.distributions,
        "selected_ports": plan.ports,
        "extras": plan.extras,
        "constraints": plan.constraints.path if plan.constraints else None,
        "profile": options.profile,
        "max_examples": options.examples,
        "mutants": options.mutants,
        "properties": {p.key: p.title for p in PROPERTIES},
        "policies": list(POLICIES),
        "machine": machine.describe(),
        "sets": [_set(result) for result in sweep.results],
        "rows": [row for i, r in enumerate(sweep.results) for row in _rows(sweep, i, r)],
        "degradations": degradations(sweep),
        "failed": sweep.failed,
        "interrupted": sweep.interrupted,
        "seconds": sweep.seconds,
    }


def _set(result: SetResult) -> dict[str, Any]:
    vset = result.vset
    return {
        "labels": vset.labels,
        "title": vset.title,
        "pins": vset.pins,
        "wanted": vset.wanted,
        "notes": vset.notes,
        "state": result.state,
        "reason": result.reason,
        "failed": result.failed,
        "venv": result.venv,
        "reused": result.reused,
        "released": result.released,
        "installed": {k: v for k, v in result.packages.items() if k in _shown(result)},
        "install_seconds": result.install_seconds,
        "run_seconds": result.run_seconds,
        "probe_seconds": result.probe_seconds,
        "exit_code": result.exit_code,
        "report": result.report_path,
    }


def _shown(result: SetResult) -> set[str]:
    """The distributions worth naming: the set's, the released ones, every port's."""
    names = set(result.vset.pins) | set(result.released)
    for port in (result.report or {}).get("ports", []):
        names |= {project.normalize(k) for k in port.get("versions") or {}}
    return names


def _rows(sweep: Sweep, index: int, result: SetResult) -> list[dict[str, Any]]:
    if result.state != "ran" or result.report is None:
        return [{"set": index, "port": "", "state": result.state, "reason": result.reason}]
    by_name = {port["name"]: port for port in result.report.get("ports", [])}
    rows = []
    for name in sweep.plan.ports:
        port = by_name.get(name, {"name": name, "state": "missing", "outcomes": []})
        rows.append(
            {
                "set": index,
                "port": name,
                "state": port.get("state", "available"),
                "reason": port.get("reason", ""),
                "versions": port.get("versions") or {},
                "outcomes": {
                    o["property"]: {
                        "property": o["property"],
                        "status": o["status"],
                        "examples": o.get("examples", 0),
                        "worst_ratio": o.get("worst_ratio"),
                        "message": (str(o.get("message") or "").splitlines() or [""])[0],
                    }
                    for o in port.get("outcomes", [])
                },
                "policies": _policy_cells(sweep, result, name),
                "seconds": port.get("seconds", 0.0),
            }
        )
    return rows


def _policy_cells(sweep: Sweep, result: SetResult, name: str) -> dict[str, dict[str, Any]]:
    if not sweep.options.policies:
        return {}
    found = result.policies.get(name) or {}
    cells = {cell["policy"]: cell for cell in found.get("cells", [])}
    problem = found.get("error") or found.get("reason") or "not measured"
    families = project.families([name])
    out = {}
    for policy in POLICIES:
        cell = cells.get(policy)
        documented = [
            {
                "key": degradation_key(d),
                "holds": (result.degradations.get(degradation_key(d)) or {}).get("holds"),
            }
            for d in sweep.degradations
            if d.family in families and d.policy == policy
        ]
        if cell is None:
            mark, note = "unknown", problem
        elif not cell["expressible"]:
            mark, note = "inexpressible", cell["spelling"]
        elif cell.get("error"):
            mark, note = "fail", cell["error"]
        elif cell.get("agrees") is False:
            ratio = cell["worst_ratio"]
            mark, note = "fail", f"differs from the canonical: worst error/bound {ratio}"
        elif cell.get("expected"):
            mark, note = "fail", cell["expected"]
        else:
            mark, note = "pass", ""
        out[policy] = {"mark": mark, "note": note, "degradations": documented}
    return out


def degradations(sweep: Sweep) -> list[dict[str, Any]]:
    """Each documented degradation at every set that ran: whether it held, the first set
    where it did not (the documented behaviour differs from there), and every change."""
    found = []
    for degradation in sweep.degradations:
        key = degradation_key(degradation)
        results = []
        for index, result in enumerate(sweep.results):
            if result.state != "ran" or key not in result.degradations:
                continue
            said = result.degradations[key]
            results.append(
                {
                    "set": index,
                    "holds": said.get("holds"),
                    "seen": said.get("seen", ""),
                    "error": said.get("error", ""),
                }
            )
        known = [r for r in results if r["holds"] is not None]
        first = next((r["set"] for r in known if not r["holds"]), None)
        changes = [
            {"from": a["set"], "to": b["set"], "holds": b["holds"]}
            for a, b in itertools.pairwise(known)
            if a["holds"] != b["holds"]
        ]
        found.append(
            {
                "key": key,
                "family": degradation.family,
                "policy": degradation.policy,
                "what": degradation.what,
                "measured": degradation.measured,
                "probe": degradation.probe,
                "results": results,
                "first_difference": first,
                "changes": changes,
            }
        )
    return found
