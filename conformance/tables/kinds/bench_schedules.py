"""`bench --schedules` (`bench-schedules.json`): per framework, schedule and depth, values
against the canonical, forward matmuls and peak bytes beside the model, step time; each
framework's best point against Revolve's frontier; what each framework cannot express, what
failed, and each flag with its reason."""

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
    unexplained = r.get("unexplained_flags")
    if unexplained is None:  # written before the field: a declared departure explained all
        unexplained = [] if r.get("departure") else flags
    if not unexplained:
        return Cell("known: " + "; ".join(flags), "warn")
    return Cell("✗ " + "; ".join(unexplained), "fail")


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


def revolve_at(frontier: list[dict[str, int]], forwards: float) -> dict[str, int] | None:
    """Revolve's leanest point that runs at most `forwards` block forwards (None: Revolve
    cannot, as a schedule keeping several blocks' internals at once can)."""
    within = [p for p in frontier if p["forwards"] <= forwards]
    return min(within, key=lambda p: p["peak_bytes"]) if within else None


def frontier_table(data: dict[str, Any]) -> Table | None:
    """Per framework at the deepest depth: its measured point nearest Revolve's frontier, its
    peak over the least Revolve keeps for no more forwards."""
    depths = (data.get("settings") or {}).get("depths") or []
    frontier = (data.get("frontier") or {}).get(str(max(depths, default=0))) or []
    found = TableBuilder(
        f"Bench · remat schedules · each framework's best against Revolve's frontier, "
        f"L = {max(depths, default='?')}",
        [
            Column("framework"),
            Column("schedule"),
            Column("forwards (measured)", "right", "count"),
            Column("peak MiB", "right", "bytes"),
            Column("Revolve at no more forwards", "right"),
            Column("ratio", "right", "ratio"),
        ],
        caption="forwards: measured forward matmuls / 2 · Revolve: binomial(c), the least "
        "c whose forward evaluations are no more, its model's peak · ratio: the framework's "
        "peak over Revolve's (1: on the frontier) · schedules that run fewer forwards than "
        "any Revolve point keep several blocks' internals at once: outside its model",
        kind="bench-schedules",
    )
    best: dict[str, tuple[float, dict[str, Any], dict[str, int]]] = {}
    for r in data.get("results") or []:
        if r["depth"] != max(depths) or not r.get("forward_matmuls") or not r.get("peak_bytes"):
            continue
        revolve = revolve_at(frontier, sum(r["forward_matmuls"]) / 2)
        if revolve is None:
            continue
        ratio = r["peak_bytes"] / revolve["peak_bytes"]
        if r["framework"] not in best or ratio < best[r["framework"]][0]:
            best[r["framework"]] = (ratio, r, revolve)
    if not best:
        return None
    for framework, (ratio, r, revolve) in best.items():
        found.add(
            [
                framework,
                r["schedule"],
                f"{sum(r['forward_matmuls']) / 2:g}",
                mib(r["peak_bytes"]),
                f"binomial({revolve['snapshots']}): {mib(revolve['peak_bytes'])} MiB, "
                f"{revolve['forwards']} forwards",
                f"{ratio:.2f}",
            ],
            key=framework,
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
    best = frontier_table(data)
    if best is not None:
        blocks += (best,)
    if found.items:
        blocks += (found,)
    return Document("bench-schedules", "Remat schedules: against the model", (Section("", blocks),))
