"""`bench --policies` (`bench-policies.json`): per framework and policy, time over no remat
and saved bytes over the minimum; what could not run, what failed, the budget verdicts."""

from __future__ import annotations

from typing import Any

from ..model import Cell, Column, Document, Items, Paragraph, Section, Table, TableBuilder
from ..numbers import mib
from .spread import NOISE, relative_spread, spread_words


def _quartiles(result: dict[str, Any]) -> str:
    ratio = result.get("time_ratio")
    if ratio is None:
        return "-"
    quartiles = result.get("time_ratio_quartiles")
    spread = "" if not quartiles else f" (IQR {quartiles[0]:.2f} to {quartiles[1]:.2f})"
    return f"{ratio:.2f}{spread}"


def table(data: dict[str, Any]) -> Table:
    """One row per framework, variant, policy and depth."""
    s = data.get("settings") or {}
    found = TableBuilder(
        f"Bench · remat policies · L = {', '.join(map(str, s.get('depths', [])))}, "
        f"B = {s.get('batch', '?')}, F = {s.get('features', '?')}",
        [
            Column("framework"),
            Column("policy"),
            Column("L", "right", "count"),
            Column("time / none (IQR)", "right", "ratio"),
            Column("spread"),
            Column("saved MiB", "right", "bytes"),
            Column("saved / min", "right", "ratio"),
            Column("matmuls", "right", "count"),
        ],
        caption=f"float32, {s.get('repeats', '?')} interleaved repeats (n per row) · time / "
        "none: the median of per-repeat ratios to the same framework's no-remat step, with "
        f"the interquartile range, n and the IQR over the median (noise: over {NOISE:.0%}) · "
        "saved / min: bytes the forward pass keeps for the backward pass over the analytic "
        "minimum L·B·F·4 (the block inputs); exact, one measurement, no spread",
        kind="bench-policies",
    )
    for r in data.get("results") or []:
        head = f"{r['framework']} {r.get('variant', '')}".strip()
        ratios = r.get("time_ratios") or []
        _, relative = relative_spread(ratios)
        words = spread_words(relative, len(ratios))
        matmuls = r.get("matmuls")
        found.add(
            [
                head,
                r["policy"],
                r["depth"],
                _quartiles(r),
                Cell(words, "warn" if words.endswith("noise") else ""),
                mib(r["saved_bytes"]),
                f"{r['saved_bytes'] / r['analytic_minimum']:.2f}",
                "-" if matmuls is None else matmuls,
            ],
            key=f"{head} {r['policy']} {r['depth']}",
        )
    return found.build()


def notes(data: dict[str, Any]) -> Items:
    """What could not run, what failed, what was skipped, and the budget verdicts."""
    lines, marks = [], []
    for name, found in (data.get("not_run") or {}).items():
        for policy, reason in found.items():
            lines.append(f"{name} · {policy}: not expressible ({reason})")
            marks.append("muted")
    for label, error in (data.get("failed") or {}).items():
        lines.append(f"✗ {label} failed: {error}")
        marks.append("fail")
    for name, why in (data.get("skipped") or {}).items():
        lines.append(f"{name} skipped: {why}")
        marks.append("warn")
    policies = data.get("policies") or {}
    for line, verdict in (data.get("budget_saved_bytes_never_rise_as_budget_falls") or {}).items():
        if verdict is None:
            continue
        said = "✓ never rise" if verdict else "✗ rise somewhere"
        budgets = [p for p in policies.get(line.split(" L=", 1)[0], []) if p.startswith("budget(")]
        named = f" ({', '.join(reversed(budgets))})" if budgets else ""
        lines.append(f"{line}: saved bytes {said} as the budget falls{named}")
        marks.append("pass" if verdict else "fail")
    return Items("", tuple(lines), tuple(marks))


def document(data: dict[str, Any]) -> Document:
    """The policy table, then its notes."""
    found = notes(data)
    blocks: tuple[Table | Items | Paragraph, ...] = (table(data),)
    if found.items:
        blocks += (found,)
    return Document("bench-policies", "Remat policies: time and memory", (Section("", blocks),))
