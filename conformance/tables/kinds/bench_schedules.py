"""`bench --schedules` (`bench-schedules.json`): per framework, schedule and depth, values
against the canonical, forward matmuls and peak bytes beside the model, step time; each
framework's best point against Revolve's frontier; what each framework cannot express, what
failed, and each flag with its reason."""

from __future__ import annotations

from typing import Any

from ..model import Cell, Column, Document, Items, Section, Table, TableBuilder
from ..numbers import mib


def _values(r: dict[str, Any]) -> Cell | str:
    if r.get("values_not_checked"):  # the check could not run: said, never a bare dash
        return Cell("not checked", "warn", title=r["values_not_checked"])
    if r.get("values_within") is None:
        return "-"
    worst = r.get("values_worst") or 0.0
    if r["values_within"]:
        return Cell(f"✓ {worst:.2g}", "pass")
    return Cell(f"✗ {worst:.3g}", "fail")


def _kib(nbytes: int | None) -> str:
    return "-" if nbytes is None else f"{nbytes / 1024:.1f}"


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
    if not unexplained:  # each met by its count model's prediction (before them: by words)
        said = "counted: " if "departure_predicted" in r else "known: "
        return Cell(said + "; ".join(flags), "warn")
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
            Column("values (|Δ| / bound)", drop=-1),
            Column("fwd matmuls (fwd + bwd)", "right"),
            Column("model", "right", "count"),
            # A terminal too narrow gives up the time first (this bench is about memory),
            # then the ratios (each is the two columns before it, divided).
            Column("matmul ratio", "right", "ratio", short="ratio", drop=1),
            Column("peak MiB", "right", "bytes"),
            Column("model MiB", "right", "bytes"),
            Column("peak ratio", "right", "ratio", short="ratio", drop=1),
            Column("fixed KiB", "right", "bytes", drop=1),
            Column("step ms (IQR) n", "right", drop=2),
            Column("against the model", wrap=True, drop=-1),
        ],
        caption="values: the output and gradients against the canonical's (Flax nn.remat_scan) "
        "over the stack's error-analysis bound, on one row · fwd matmuls: x @ W1 and a @ W2 "
        "executed, two per block evaluation; model: 2 x forward_evaluations(L), accepted down "
        "to one fewer per region · peak: bytes alive in the backward pass, parameters and "
        "gradients left out, by the method named under the table: the part that grows with the "
        "batch where it splits it (peak(2B) - peak(B)), the rest apart (fixed: RNG states, a "
        "runtime's buffers); model: peak_activations(L) · "
        "acceptance: " + "; ".join(f"{k}: {v}" for k, v in (data.get("acceptance") or {}).items()),
        kind="bench-schedules",
        note=methods(data),
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
                _kib(r.get("peak_fixed_bytes")),
                _time(r),
                _flag(r),
            ],
            key=f"{r['framework']} {r['schedule']} {r['depth']}",
        )
    return found.build()


def methods(data: dict[str, Any]) -> str:
    """How each framework's peak was measured, named once under the table (not on each of
    its rows): "peak measured by: torch, deepspeed: torch profiler ...; jax: ...", then the
    rows whose peak is not observable, counted per framework (each row's reason is its
    `peak_method` in the JSON: a per-row count or size, so not repeated here)."""
    by_method: dict[str, list[str]] = {}
    unseen: dict[str, int] = {}
    for r in data.get("results") or []:
        method = r.get("peak_method") or ""
        if method.startswith("not observable: "):
            unseen[r["framework"]] = unseen.get(r["framework"], 0) + 1
            continue
        names = by_method.setdefault(method, []) if method else []
        if method and r["framework"] not in names:
            names.append(r["framework"])
    said = "; ".join(f"{', '.join(names)}: {method}" for method, names in by_method.items())
    if unseen:
        rows = ", ".join(f"{name} {count}" for name, count in unseen.items())
        said += (" · " if said else "") + (
            f"not observable on rows of {rows} (each row's reason: its peak_method in the JSON)"
        )
    return f"peak measured by {said}." if said else ""


def revolve_at(frontier: list[dict[str, int]], forwards: float) -> dict[str, int] | None:
    """Revolve's leanest point that runs at most `forwards` block forwards (None: none does)."""
    within = [p for p in frontier if p["forwards"] <= forwards]
    return min(within, key=lambda p: p["peak_bytes"]) if within else None


def _point(p: dict[str, int] | None, measure: str) -> str:
    if p is None:
        return "-"
    shown = f"{mib(p['peak_bytes'])} MiB" if measure == "peak" else f"{p['forwards']} forwards"
    return f"{shown} (binomial({p['snapshots']}))"


def evaluations_of(row: dict[str, Any]) -> float | None:
    """The row's block evaluations in the model's convention: the model's count where its
    forward matmuls lie within the acceptance (a rerun that skips its region's last a @ W2
    still evaluates that block: docs/SCHEDULES.md, convention 2), else matmuls / 2."""
    if row.get("forward_matmuls") is None:
        return None
    total = sum(row["forward_matmuls"])
    if row["least_matmuls"] <= total <= row["model_matmuls"]:
        return row["model_matmuls"] / 2
    return total / 2


def optimum_at(points: list[dict[str, Any]], evaluations: float) -> float | None:
    """The optimum's least peak bytes within `evaluations` (None: fewer than it can do)."""
    within = [p["peak_bytes"] for p in points if p["evaluations"] <= evaluations]
    return min(within) if within else None


def frontier_table(data: dict[str, Any]) -> Table | None:
    """Per framework at the deepest depth: its measured point nearest the true optimum (the
    least peak over the optimum's at no more evaluations, at the framework's a), beside
    Revolve's at no more forwards."""
    depths = (data.get("settings") or {}).get("depths") or []
    deepest = max(depths, default=0)
    frontier = (data.get("frontier") or {}).get(str(deepest)) or []
    optimum = (data.get("optimum") or {}).get(str(deepest)) or {}
    found = TableBuilder(
        f"Bench · remat schedules · each framework's best against the true optimum, L = {deepest}",
        [
            Column("framework"),
            Column("schedule"),
            Column("forwards (measured)", "right", "count"),
            Column("peak MiB", "right", "bytes"),
            Column("optimum's peak, no more evaluations", "right", "bytes"),
            Column("peak / optimum", "right", "ratio"),
            Column("Revolve's peak, no more forwards", "right"),
            Column("peak / Revolve's", "right", "ratio"),
        ],
        caption="forwards: measured forward matmuls / 2 · optimum: implementations.optimum's "
        "frontier at the framework's a (its INTERNALS_UNITS, else 1), the least peak within "
        "the row's evaluations (the model's count where its matmuls are within the acceptance) "
        "· best: the framework's least peak over the optimum's, none (which reruns nothing) "
        "left out · a framework whose peak is not observable has no row · at or above 1: on or "
        "above the optimum, as every measured point must be · Revolve: binomial(c), its model, "
        "at no more forwards than the row's schedule's model; below 1 where the schedule tapes "
        "several blocks at once, which Revolve's model does not (docs/SCHEDULES.md)",
        kind="bench-schedules",
    )
    best: dict[str, tuple[float, dict[str, Any], float]] = {}
    for r in data.get("results") or []:
        if r["depth"] != deepest or not r.get("forward_matmuls") or not r.get("peak_bytes"):
            continue
        if r["schedule"] == "none":  # reruns nothing: the frontier's end, not a schedule's
            continue
        points = (optimum.get(r["framework"]) or {}).get("points") or []
        least = optimum_at(points, evaluations_of(r))
        if least is None:
            continue
        ratio = r["peak_bytes"] / least
        if r["framework"] not in best or ratio < best[r["framework"]][0]:
            best[r["framework"]] = (ratio, r, least)
    if not best:
        return None
    for framework, (ratio, r, least) in best.items():
        # the schedule's own model's forwards: the same parameters on both sides
        revolve = revolve_at(frontier, r.get("model_matmuls", sum(r["forward_matmuls"])) / 2)
        found.add(
            [
                framework,
                r["schedule"],
                f"{sum(r['forward_matmuls']) / 2:g}",
                mib(r["peak_bytes"]),
                mib(least),
                f"{ratio:.2f}",
                _point(revolve, "peak") if revolve else "-",
                f"{r['peak_bytes'] / revolve['peak_bytes']:.2f}" if revolve else "-",
            ],
            key=framework,
        )
    return found.build()


def departures_table(data: dict[str, Any]) -> Table | None:
    """Every flagged row's departure, per figure it predicts: the prediction, the measurement,
    the model's figure and the upstream reference (None: no row has a count model's)."""
    found = TableBuilder(
        "Bench · remat schedules · departures: each count model's prediction against the "
        "measurement",
        [
            Column("framework"),
            Column("schedule"),
            Column("L", "right", "count"),
            Column("figure"),
            Column("predicted", "right"),
            Column("measured", "right"),
            Column("model", "right"),
            Column("met", drop=-1),
            Column("reference", wrap=True, drop=1),
        ],
        caption="figure: forward_matmuls (both passes), peak_units (the peak's part that grows "
        "with the batch, in B x F float32 arrays) · met: within the acceptance the model has "
        "(a flag is explained only then) · a reason in words predicts nothing",
        kind="bench-schedules",
    )
    units = {"batch": 1, "features": 1, **(data.get("settings") or {})}
    unit = units["batch"] * units["features"] * 4
    for r in data.get("results") or []:
        predicted = r.get("departure_predicted") or {}
        if not r.get("flags") or not predicted:
            continue
        model = {"forward_matmuls": r["model_matmuls"], "peak_units": r["model_peak_bytes"] / unit}
        for figure, value in predicted.items():
            seen = (r.get("departure_measured") or {}).get(figure)
            off = [f for f in r.get("unexplained_flags") or [] if _names(f, figure)]
            found.add(
                [
                    r["framework"],
                    r["schedule"],
                    r["depth"],
                    figure,
                    f"{value:g}",
                    "-" if seen is None else f"{seen:.4g}",
                    f"{model[figure]:g}",
                    Cell("✗", "fail") if off else Cell("✓", "pass"),
                    r.get("departure_reference") or "-",
                ],
                key=f"{r['framework']} {r['schedule']} {r['depth']} {figure}",
            )
    built = found.build()
    return built if built.rows else None


def _names(flag: str, figure: str) -> bool:
    return flag.startswith("peak" if figure == "peak_units" else "forward matmuls")


def notes(data: dict[str, Any]) -> Items:
    """What each framework cannot express, the known departures, failures, skips."""
    lines, marks = [], []
    for name, found in (data.get("not_expressible") or {}).items():
        for schedule, reason in found.items():
            lines.append(f"{name} · {schedule}: not expressible ({reason})")
            marks.append("muted")
    for name, found in (data.get("departures") or {}).items():
        for schedule, reason in found.items():
            lines.append(f"{name} · {schedule}: departs from the model: {reason}")
            marks.append("warn")
    for label, error in (data.get("failed") or {}).items():
        lines.append(f"✗ {label} failed: {error}")
        marks.append("fail")
    for name, why in (data.get("skipped") or {}).items():
        lines.append(f"{name} skipped: {why}")
        marks.append("warn")
    rows = len(data.get("results") or [])
    for why, count in values_not_checked(data).items():
        lines.append(f"values of {count} of {rows} rows {why}")
        marks.append("warn")
    return Items("", tuple(lines), tuple(marks))


def values_not_checked(data: dict[str, Any]) -> dict[str, int]:
    """Each reason the values check could not run, and on how many rows (from the rows, for a
    report written before the summary field)."""
    found = data.get("values_not_checked")
    if isinstance(found, dict):
        return found
    counted: dict[str, int] = {}
    for r in data.get("results") or []:
        if r.get("values_not_checked"):
            counted[r["values_not_checked"]] = counted.get(r["values_not_checked"], 0) + 1
    return counted


def document(data: dict[str, Any]) -> Document:
    """The schedule table, then its notes."""
    found = notes(data)
    blocks: tuple[Table | Items, ...] = (table(data),)
    best = frontier_table(data)
    if best is not None:
        blocks += (best,)
    departed = departures_table(data)
    if departed is not None:
        blocks += (departed,)
    if found.items:
        blocks += (found,)
    return Document("bench-schedules", "Remat schedules: against the model", (Section("", blocks),))
