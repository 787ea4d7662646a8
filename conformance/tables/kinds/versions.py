"""`versions EXTRA` (its JSON, `versions --out`): the sweep's matrix, built once for the
terminal, Markdown and the report page; its sets, degradations and failures as lists.

Rows are port x version set, grouped by set; columns the properties (the run matrix's own
cells) and the remat policies (✓ the canonical's results and what its stack declares, ✗
not, - not expressible; D where a documented degradation concerns the cell: D it holds
here, D✗ it does not, D? its probe failed).
"""

from __future__ import annotations

from typing import Any

from ...running.runner import FAILING
from ..model import Cell, Column, Document, Items, Paragraph, Section, Table, TableBuilder
from ..numbers import wall
from . import outcomes

SHORT = {"save_dots": "dots", "save_named": "named", "offload_dots": "offload"}
POLICY_MARKS = {
    "pass": ("✓", "pass"),
    "fail": ("✗", "fail"),
    "inexpressible": ("-", "muted"),
    "unknown": ("?", "warn"),
}
CAPTION = (
    "Rows: each port at each version set (lowest: the lowest each requirement of the extra "
    "allows and the index serves; pin: constraints.txt; newest: the newest served; "
    "installed: this interpreter's, run in it with no install), every other distribution at "
    "its pin (installed: as this interpreter has it). Property cells are the run matrix's: "
    "✓N passed on N examples (below it the worst error/bound), ✗fail @N, ref, skip. Policy "
    "cells (a small shape, as compare's policy matrix): ✓ the canonical's results and what "
    "the stack declares, ✗ not, - not expressible; D a documented degradation holds there, "
    "D✗ it does not, D? its probe failed. ·: the set was not run or not installed (below: "
    "why)."
)


def title(data: dict[str, Any]) -> str:
    examples = data.get("max_examples")
    examples = "the profile's" if examples is None else examples
    ran = any(found["state"] == "ran" for found in data["sets"])
    verdict = "some failed" if data.get("failed") else "all passed" if ran else "no set ran"
    sets = len(data["sets"])
    counted = f"{sets} version set" + ("" if sets == 1 else "s")
    return (
        f"remat-conformance versions · extra {data['extra']} · {counted} · "
        f"profile {data['profile']} · {examples} examples per property · {verdict}"
    )


def policy_cell(cell: dict[str, Any] | None) -> Cell:
    """One policy cell: its mark, then D, D✗ or D? per documented degradation."""
    if not cell:
        return Cell()
    text, mark = POLICY_MARKS.get(cell["mark"], ("?", "warn"))
    for documented in cell.get("degradations", []):
        holds = documented["holds"]
        text += " D" if holds else " D✗" if holds is False else " D?"
        if holds is False:
            mark = "fail"
        elif mark == "pass":
            mark = "warn"
    return Cell(text, mark)


def _versions(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in (row.get("versions") or {}).items())


def matrix(data: dict[str, Any]) -> Table:
    """Port x version set (a heading row per set): the properties, then the policies."""
    keys = list(data["properties"])
    policies = data["policies"] if any(r.get("policies") for r in data["rows"]) else []
    table = TableBuilder(
        title(data),
        [
            Column("port", wrap=True),
            *(Column(outcomes.column(k), "center") for k in keys),
            *(Column(SHORT.get(p, p), "center") for p in policies),
            Column("time", "right", "seconds"),
        ],
        caption=f"{outcomes.names(keys)}. {CAPTION}",
        kind="versions",
    )
    width = len(keys) + len(policies)
    last = None
    for row in data["rows"]:
        if row["set"] != last:
            last = row["set"]
            table.heading(data["sets"][row["set"]]["title"], key=f"set-{row['set']}")
        key = f"{row['set']}-{row['port'] or 'set'}"
        if not row["port"]:
            said = Cell(row["state"], "warn" if row["state"] == "not run" else "fail")
            table.add([said, *[outcomes.NOT_LOADED] * width, ""], key=key)
            continue
        label = Cell(row["port"], note=_versions(row))
        if row["state"] != "available":
            state = Cell(row["state"], "warn" if row["state"] == "unavailable" else "fail")
            table.add([label, *[outcomes.NOT_LOADED] * width, state], key=key)
            continue
        cells = [outcomes.cell(row["outcomes"].get(k)) for k in keys]
        cells += [policy_cell(row["policies"].get(p)) for p in policies]
        table.add([label, *cells, f"{wall(row.get('seconds') or 0)}s"], key=key)
    return table.build()


def set_lines(data: dict[str, Any]) -> list[str]:
    """Per set: what was done, and why a set was not run or not installed."""
    lines = []
    for found in data["sets"]:
        head = found["title"]
        if found["state"] == "ran":
            seconds = found["install_seconds"]
            how = "venv reused" if found["reused"] else f"installed in {seconds:.0f} s"
            if "installed" in found["labels"]:  # no venv: `versions --versions installed`
                how = f"the running interpreter ({found['venv']}), no install"
            parts = [how, f"suite {found['run_seconds']:.0f} s"]
            if found["probe_seconds"]:
                parts.append(f"probes {found['probe_seconds']:.0f} s")
            if found["released"]:
                released = ", ".join(f"{k}=={v}" for k, v in found["released"].items())
                parts.append(f"pins released: {released}")
            installed = ", ".join(f"{k} {v}" for k, v in sorted(found["installed"].items()))
            lines.append(f"{head}: {'; '.join(parts)}; installed {installed}")
        else:
            lines.append(f"{head}: {found['state']}: {found['reason']}")
        lines += [f"  note: {note}" for note in found["notes"] if found["state"] == "ran"]
    return lines


def degradation_lines(data: dict[str, Any]) -> list[str]:
    """Per documented degradation: where it holds, and the first version that differs."""
    sets = data["sets"]
    lines = []
    for found in data["degradations"]:
        head = f"{found['family']} · {found['policy']}: {found['what']}"
        head += f" (documented: {found['measured']})"
        results = found["results"]
        if not results:
            lines.append(f"{head}: not probed")
            continue
        known = [r for r in results if r["holds"] is not None]
        errors = [f"{sets[r['set']]['title']}: {r['error']}" for r in results if r["error"]]
        if known and all(r["holds"] for r in known):
            said = "holds at every version swept"
        elif known and not any(r["holds"] for r in known):
            said = "holds at no version swept"
        else:
            said = "holds at " + ", ".join(
                sets[r["set"]]["title"] for r in known if r["holds"]
            ) if known else "no probe answered"  # fmt: skip
        if found["first_difference"] is not None:
            said += f"; the first version that differs: {sets[found['first_difference']]['title']}"
        for change in found["changes"]:
            verb = "starts holding" if change["holds"] else "stops holding"
            said += f"; {verb} at {sets[change['to']]['title']}"
        lines.append(f"{head}: {said}")
        lines += [f"  probe failed at {e}" for e in errors]
        for r in known:
            lines.append(f"  {sets[r['set']]['title']}: {r['seen']}")
    return lines


def failures(data: dict[str, Any]) -> list[str]:
    """One line per failing outcome, port, policy cell or set (from `to_json`'s data)."""
    sets = data["sets"]
    lines = []
    for row in data["rows"]:
        where = sets[row["set"]]["title"]
        if not row["port"]:
            if row["state"] in ("not installed", "no report"):
                lines.append(f"{where}: {row['state']}: {row['reason']}")
            continue
        if row["state"] not in ("available", "unavailable"):
            lines.append(f"{where} · {row['port']}: {row['state']}: {row['reason']}")
        for outcome in row["outcomes"].values():
            if outcome["status"] in FAILING:
                lines.append(
                    f"{where} · {row['port']} · {outcome['property']}: {outcome['status']}: "
                    f"{outcome['message']}"
                )
        for policy, cell in row.get("policies", {}).items():
            if cell["mark"] == "fail":
                lines.append(f"{where} · {row['port']} · policy {policy}: {cell['note']}")
    return lines


def document(data: dict[str, Any]) -> Document:
    """The matrix, the sets, the documented degradations, the failures."""
    blocks: list[Any] = [matrix(data), Items("Version sets", tuple(set_lines(data)))]
    if data["degradations"]:
        blocks.append(Items("Documented degradations", tuple(degradation_lines(data))))
    found = failures(data)
    if found:
        lines = tuple(f"✗ {line}" for line in found)
        blocks.append(Items("Failures", lines, ("fail",) * len(lines)))
    if data.get("interrupted"):
        blocks.append(Paragraph("interrupted: the matrix holds the sets that finished", "warn"))
    return Document("versions", "", (Section("", tuple(blocks)),))


def verdict(data: dict[str, Any]) -> Paragraph:
    """The sweep's verdict in one line, a terminal's last: "The sweep of jax passed · 3 of
    3 version sets ran · 412 s wall"."""
    sets = data["sets"]
    ran = sum(found["state"] == "ran" for found in sets)
    failed = len(failures(data))
    word = (
        "was interrupted" if data.get("interrupted") else ("failed" if data["failed"] else "passed")
    )
    parts = [f"The sweep of {data['extra']} {word}", f"{ran} of {len(sets)} version sets ran"]
    if failed:
        parts.append(f"{failed} failure{'s' if failed != 1 else ''} (listed above)")
    parts.append(f"{data.get('seconds') or 0:.0f} s wall")
    return Paragraph(" · ".join(parts), "fail" if data["failed"] else "pass")
