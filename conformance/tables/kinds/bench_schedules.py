"""`bench --schedules` (`bench-schedules.json`): per framework, schedule and depth, values
against the canonical, forward matmuls and peak bytes beside the model, step time; what each
framework cannot express, what failed, and each flag with its reason."""

from __future__ import annotations

from typing import Any

from ..model import Cell, Column, Document, Items, Section, Table, TableBuilder
from ..numbers import mib


def _values(r: dict[str, Any]) -> Cell | str:
    if r.get("values_within") is None:
        return "-"
    worst = r.get("values_worst") or 0.0
    if r["values_within"]:
        return Cell(f"✓ {worst:.2g}", "pass")
    return Cell(f"✗ {worst:.3g}", "fail")


def _time(r: dict[str, Any]) -> str:
    median = r.get("step_median")
    if median is None:
        return "-"
    quartiles = r.get("step_quartiles")
    spread = "" if not quartiles else f" ({quartiles[0] * 1e3:.1f} to {quartiles[1] * 1e3:.1f})"
    return f"{median * 1e3:.1f}{spread} n={r.get('n', 0)}"


def _flag(r: dict[str, Any]) -> Cell | str:
    flags = r.get("flags") or []
    if not flags:
        return Cell("✓", "pass")
    if r.get("departure"):
        return Cell("known: " + "; ".join(flags), "warn")
    return Cell("✗ " + "; ".join(flags), "fail")


def table(data: dict[str, Any]) -> Table:
    """One row per framework, schedule and depth."""
    s = data.get("settings") or {}
    found = TableBuilder(
        f"Bench · remat schedules · L = {', '.join(map(str, s.get('depths', [])))}, "
        f"B = {s.get('batch', '?')}, F = {s.get('features', '?')}",
        [
            Column("framework"),
            Column("schedule"),
            Column("L", "right", "count"),
            Column("values (|Δ| / bound)"),
            Column("fwd matmuls (fwd + bwd)", "right"),
            Column("model", "right", "count"),
            Column("ratio", "right", "ratio"),
            Column("peak MiB", "right", "bytes"),
            Column("model MiB", "right", "bytes"),
            Column("ratio", "right", "ratio"),
            Column("peak method", wrap=True),
            Column("step ms (IQR) n", "right"),
            Column("against the model", wrap=True),
        ],
        caption="values: the output and gradients against the canonical's (Flax nn.remat_scan) "
        "over the stack's error-analysis bound, on one row · fwd matmuls: x @ W1 and a @ W2 "
        "executed, two per block evaluation; model: 2 x forward_evaluations(L), accepted down "
        "to one fewer per region · peak: bytes alive in the backward pass, parameters and "
        "gradients left out, by the method named; model: peak_activations(L) · acceptance: "
        + "; ".join(f"{k}: {v}" for k, v in (data.get("acceptance") or {}).items()),
        kind="bench-schedules",
    )
    for r in data.get("results") or []:
        matmuls = r.get("forward_matmuls")
        peak, ratio, matmul_ratio = r.get("peak_bytes"), r.get("peak_ratio"), r.get("matmul_ratio")
        found.add(
            [
                r["framework"],
                r["schedule"],
                r["depth"],
                _values(r),
                "-" if matmuls is None else f"{sum(matmuls)} ({matmuls[0]} + {matmuls[1]})",
                r["model_matmuls"],
                "-" if matmul_ratio is None else f"{matmul_ratio:.2f}",
                "-" if peak is None else mib(peak),
                mib(r["model_peak_bytes"]),
                "-" if ratio is None else f"{ratio:.2f}",
                r.get("peak_method", ""),
                _time(r),
                _flag(r),
            ],
            key=f"{r['framework']} {r['schedule']} {r['depth']}",
        )
    return found.build()


def notes(data: dict[str, Any]) -> Items:
    """What each framework cannot express, the known departures, failures, skips."""
    lines, marks = [], []
    for name, found in (data.get("not_expressible") or {}).items():
        for schedule, reason in found.items():
            lines.append(f"{name} · {schedule}: not expressible ({reason})")
            marks.append("muted")
    for name, found in (data.get("departures") or {}).items():
        for schedule, reason in found.items():
            lines.append(f"{name} · {schedule}: departs from the model, known: {reason}")
            marks.append("warn")
    for label, error in (data.get("failed") or {}).items():
        lines.append(f"✗ {label} failed: {error}")
        marks.append("fail")
    for name, why in (data.get("skipped") or {}).items():
        lines.append(f"{name} skipped: {why}")
        marks.append("warn")
    return Items("", tuple(lines), tuple(marks))


def document(data: dict[str, Any]) -> Document:
    """The schedule table, then its notes."""
    found = notes(data)
    blocks: tuple[Table | Items, ...] = (table(data),)
    if found.items:
        blocks += (found,)
    return Document("bench-schedules", "Remat schedules: against the model", (Section("", blocks),))
