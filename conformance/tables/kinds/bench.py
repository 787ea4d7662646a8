"""`bench` (the depth sweep, `bench.json`): its results table, its targets, its notes."""

from __future__ import annotations

import os
from typing import Any

from implementations.bench_case import MODES

from .. import numbers
from ..model import Cell, Column, Document, Items, Paragraph, Section, Table, TableBuilder
from .spread import NOISE, with_spread

# How a verdict reads, with or without colour.
VERDICT_MARKS = {"met": "✓", "missed": "✗", "inconclusive": "inconclusive"}

#: The results' columns; the short headings fit a terminal's 80 columns.
COLUMNS = (
    Column("L", "right", "count"),
    Column("stack"),
    Column("mode"),
    Column("saved MiB", "right", "bytes", short="saved"),
    Column("saved/min", "right", "ratio", short="xmin"),
    Column("XLA temp MiB", "right", "bytes", short="temp"),
    Column("peak MiB", "right", "bytes", short="peak"),
    Column("matmuls", "right", "count", short="mm"),
    Column("n", "right", "count"),
    Column("step ms", "right", "seconds", short="ms"),
    Column("time/none", "right", "ratio", short="xnone"),
)
VERDICT_TONES = {"met": "pass", "missed": "fail", "inconclusive": "warn"}
#: A bench mode as every output spells it: the policy vocabulary's name (`save-mm` is the
#: bench's internal mode name for `save_dots`).
MODE_NAMES = {"save-mm": "save_dots"}
#: Fewer timed repeats than this, and the sweep is a smoke run (it ran; it times nothing).
MEANINGFUL_REPEATS = 10


def mode_name(mode: str) -> str:
    """A bench mode in the policy vocabulary's spelling: `save_dots` for `save-mm`."""
    return MODE_NAMES.get(mode, mode)


def noisy(spread: float | None) -> bool:
    """Whether a half-IQR relative spread is noise (its whole IQR over `NOISE` of the median)."""
    return spread is not None and 2 * spread > NOISE


def _order(result: dict[str, Any]) -> tuple:
    mode = result["mode"]
    rank = MODES.index(mode) if mode in MODES else len(MODES)
    return (result["depth"], result["framework"], result.get("variant", ""), rank)


def ratio_with_spread(result: dict[str, Any], target: float = 0.05) -> str:
    """`1.31 ±2%`: a result's median time ratio and its spread; `!` marks a spread over the
    target, `±?` an unknown one (a single repeat); `noise` a spread wider than half the
    median (the figure says nothing: the picture shows the spread)."""
    if result.get("time_ratio") is None:
        return "-"
    if result["mode"] == "none":  # the baseline's ratio to itself is 1 by definition
        return "1"
    spread = result.get("time_ratio_spread")
    if noisy(spread):
        return f"{result['time_ratio']:.2f} noise"
    mark = "!" if spread is None or spread > target else ""
    return with_spread(result["time_ratio"], spread, ".2f") + mark


def rows(results: list[dict[str, Any]], target: float = 0.05) -> list[list[str]]:
    """One row of cells per result (as `bench.json` holds it), ordered by depth, then
    framework, variant and mode."""
    found = []
    for r in sorted(results, key=_order):
        median = r.get("step_median")
        step = None if median is None else median * 1e3
        found.append(
            [
                str(r["depth"]),
                f"{r['framework']} {r.get('variant', '')}".strip(),
                mode_name(r["mode"]),
                numbers.mib(r["saved_bytes"]),
                f"{r['saved_ratio']:.2f}",
                numbers.mib(r.get("temp_bytes")),
                numbers.mib(r.get("peak_bytes")),
                "-" if r.get("matmuls") is None else str(r["matmuls"]),
                str(r.get("n", len(r.get("step_seconds") or []))),
                f"{step:.2f} noise"
                if step is not None and noisy(r.get("step_spread"))
                else with_spread(step, r.get("step_spread")),
                ratio_with_spread(r, target),
            ]
        )
    return found


def target_ratio(target: dict[str, Any], which: str) -> str:
    """`1.31 ±2% (n=11)`: a target's ratio with what it rests on."""
    ratio = target[f"time_ratio_{which}"]
    if ratio is None:
        return "-"
    spread = target[f"time_ratio_{which}_spread"]
    n = target[f"time_ratio_{which}_n"]
    if noisy(spread):
        return f"{ratio:.2f} noise (n={n})"
    return f"{with_spread(ratio, spread, '.2f')} (n={n})"


def load_warning(load: dict[str, float], cores: int | None = None) -> str:
    """A sentence when the 1-minute load average (`before`, `after`) exceeded the cores
    (default: this machine's); else ''."""
    cores = cores or os.cpu_count() or 1
    loads = {k: v for k, v in load.items() if v == v}  # NaN: no load average here
    over = {k: v for k, v in loads.items() if v > cores}
    if not over:
        return ""
    said = ", ".join(f"{v:.1f} {k}" for k, v in loads.items())
    return (
        f"the machine was loaded (1-minute load average {said}, over its {cores} cores): "
        "other processes shared the CPUs, so the times are noisy; read them with their spreads"
    )


def results_table(data: dict[str, Any]) -> Table:
    """Every configuration at every depth, each figure with n and its spread."""
    s = _settings(data)
    table = TableBuilder(
        f"Bench · L blocks of Dense({s.features}) → relu → Dense({s.features}), batch {s.batch}",
        COLUMNS,
        caption="saved: residual MiB, parameters left out · saved/min (xmin): over L·B·F·4 "
        "(block inputs) · XLA temp MiB (temp): XLA compiled temp MiB · peak MiB (peak): the "
        "stack's allocator's peak (definitions) · matmuls (mm): per step · n: timed repeats · "
        "step ms (ms): median step ± half its interquartile range, relative · time/none "
        "(xnone): median per-repeat time ratio ± half its interquartile range "
        f"(! over ±{s.target_spread:.0%}; ±?: one repeat, spread unknown; noise: the "
        "interquartile range is over half the median, the figure says nothing: the picture "
        "draws the spread)",
        kind="bench",
    )
    for row in rows(data.get("results") or [], s.target_spread):
        mark = "warn" if row[-1].endswith(("!", "noise")) else ""
        table.add([*row[:-1], Cell(row[-1], mark)], key=" ".join(row[:3]))
    return table.build()


def targets_table(data: dict[str, Any]) -> Table:
    """The targets with a checkpoint per block (`bench.json`'s `targets`): ✓ met, ✗ missed
    or inconclusive."""
    s = _settings(data)
    deepest = max(s.depths) if s.depths else "?"
    table = TableBuilder(
        "Bench targets (a checkpoint per block)",
        [
            Column("line"),
            Column(
                f"saved/min, worst L (≤ {data.get('saved_target', '?')})",
                "right",
                "ratio",
                short="saved/min",
            ),
            Column(f"time/none at L={deepest}", "right", "ratio", short=f"at L={deepest}"),
            Column("time/none, worst L", "right", "ratio", short="worst L"),
            Column("time target", short="target"),
            Column("verdict"),
        ],
        caption=f"saved/min: the worst over L, target ≤ {data.get('saved_target', '?')} · "
        f"✓/✗ only where the ratio's spread is within ±{s.target_spread:.0%} and its band "
        "clears the target; otherwise inconclusive",
        kind="targets",
    )
    for t in data.get("targets") or []:
        met = t["saved_target_met"]
        table.add(
            [
                t["line"],
                Cell(
                    f"{t['saved_ratio_worst']:.2f} {'✓' if met else '✗'}", "pass" if met else "fail"
                ),
                target_ratio(t, "deepest"),
                target_ratio(t, "worst"),
                f"≤ {t['time_target']} at {t['time_target_at']}",
                Cell(VERDICT_MARKS[t["time_verdict"]], VERDICT_TONES[t["time_verdict"]]),
            ],
            key=t["line"],
        )
    return table.build()


def smoke(data: dict[str, Any]) -> Paragraph | None:
    """A plain sentence when the sweep was a smoke run (fewer than `MEANINGFUL_REPEATS`
    repeats, or most time ratios noise): it shows that each mode ran, not what it costs."""
    s = _settings(data)
    ratios = [r for r in data.get("results") or [] if r["mode"] != "none"]
    noise = sum(noisy(r.get("time_ratio_spread")) for r in ratios)
    few = isinstance(s.repeats, int) and s.repeats < MEANINGFUL_REPEATS
    if not few and noise * 2 <= len(ratios):
        return None
    why = [
        f"{s.repeats} timed repeats" if few else "",
        f"{noise} of {len(ratios)} time ratios noise" if noise else "",
    ]
    return Paragraph(
        "A smoke run (" + ", ".join(w for w in why if w) + "): it shows that each stack and "
        "mode runs, and what each keeps; its times are not worth comparing. For times, run "
        "python -m conformance bench (or report --make bench --full-bench) on a quiet machine.",
        "warn",
    )


def warning(data: dict[str, Any]) -> str:
    """The load warning of a `bench.json`, judged against the cores it records."""
    machine = data.get("machine") or {}
    return load_warning(machine.get("load_average_1min") or {}, machine.get("cpus"))


def document(data: dict[str, Any], *, full: bool = True) -> Document:
    """The bench as `bench.md` has it (`full`: its settings, modes and definitions too; the
    terminal shows the tables and what needs saying)."""
    s = _settings(data)
    machine = data.get("machine") or {}
    load = machine.get("load_average_1min") or {}
    head: list[Any] = []
    if full:
        versions = "; ".join(
            f"{name}: " + ", ".join(f"{k} {v}" for k, v in found.items())
            for name, found in (data.get("versions") or {}).items()
        )
        said = (
            f" (1-minute load average {load['before']:.1f} before, {load['after']:.1f} after)"
            if {"before", "after"} <= set(load)
            else ""
        )
        head.append(
            Paragraph(
                f"Depths {', '.join(map(str, s.depths))}; {s.repeats} interleaved repeats; "
                f"seed {s.seed}; {data.get('wall_seconds', 0):.0f} s wall on "
                f"{machine.get('cpus')} CPUs{said}. Versions: {versions}."
            )
        )
    found = load_warning(load, machine.get("cpus"))
    if found:
        head.append(Paragraph(f"Warning: {found}", "warn"))
    skipped = (data.get("skipped") or {}).items()
    head += [Paragraph(f"Skipped {name}: {reason}.") for name, reason in skipped]
    if full:
        modes = "; ".join(f"{mode_name(m)}: {t}" for m, t in (data.get("modes") or {}).items())
        head.append(Paragraph(f"Modes: {modes}."))
    sections = [
        Section("", (*head, results_table(data))),
        Section("", (targets_table(data),)),
    ]
    if full:
        items = tuple(f"{key}: {text}" for key, text in (data.get("definitions") or {}).items())
        sections.append(Section("Definitions", (Items("", items),)))
    return Document("bench", "Bench", tuple(sections))


class _Settings:
    """The settings a table reads, from `bench.json`'s `settings`."""

    def __init__(self, found: dict[str, Any]) -> None:
        self.depths = tuple(found.get("depths") or ())
        self.batch = found.get("batch", "?")
        self.features = found.get("features", "?")
        self.repeats = found.get("repeats", "?")
        self.seed = found.get("seed", "?")
        self.target_spread = found.get("target_spread", 0.05)


def _settings(data: dict[str, Any]) -> _Settings:
    return _Settings(data.get("settings") or {})
