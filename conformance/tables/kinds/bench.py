"""`bench` (the depth sweep, `bench.json`): its results table, its targets, its notes."""

from __future__ import annotations

from typing import Any

from implementations.bench_case import MODES

from ...benchmark import BenchReport, from_json
from ...benchmark.measure import SAVED_TARGET, Result, definitions, mode_titles
from ...benchmark.targets import (
    VERDICT_MARKS,
    load_warning,
    ratio_with_spread,
    target_ratio,
    targets,
)
from .. import numbers
from ..model import Cell, Column, Document, Items, Paragraph, Section, Table, TableBuilder
from .spread import with_spread

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


def _order(result: Result) -> tuple:
    return (result.depth, result.framework, result.variant, MODES.index(result.mode))


def rows(results: list[Result]) -> list[list[str]]:
    """One row of cells per result, ordered by depth, then framework, variant and mode."""
    found = []
    for r in sorted(results, key=_order):
        step = None if r.step_median is None else r.step_median * 1e3
        found.append(
            [
                str(r.depth),
                f"{r.framework} {r.variant}".strip(),
                r.mode,
                numbers.mib(r.saved_bytes),
                f"{r.saved_ratio:.2f}",
                numbers.mib(r.temp_bytes),
                numbers.mib(r.peak_bytes),
                "-" if r.matmuls is None else str(r.matmuls),
                str(r.n),
                with_spread(step, r.step_spread),
                ratio_with_spread(r),
            ]
        )
    return found


def results_table(report: BenchReport) -> Table:
    """Every configuration at every depth, each figure with n and its spread."""
    s = report.settings
    table = TableBuilder(
        f"Bench · L blocks of Dense({s.features}) → relu → Dense({s.features}), batch {s.batch}",
        COLUMNS,
        caption="saved: residual MiB, parameters left out · saved/min (xmin): over L·B·F·4 "
        "(block inputs) · XLA temp MiB (temp): XLA compiled temp MiB · peak MiB (peak): the "
        "stack's allocator's peak (definitions) · matmuls (mm): per step · n: timed repeats · "
        "step ms (ms): median step ± half its interquartile range, relative · time/none "
        "(xnone): median per-repeat time ratio ± half its interquartile range "
        f"(! over ±{s.target_spread:.0%}; ±?: one repeat, spread unknown)",
        kind="bench",
    )
    for row in rows(report.results):
        mark = "warn" if row[-1].endswith("!") else ""
        table.add([*row[:-1], Cell(row[-1], mark)], key=" ".join(row[:3]))
    return table.build()


def targets_table(report: BenchReport) -> Table:
    """The targets with a checkpoint per block: ✓ met, ✗ missed or inconclusive."""
    s = report.settings
    deepest = max(s.depths) if s.depths else "?"
    table = TableBuilder(
        "Bench targets (a checkpoint per block)",
        [
            Column("line"),
            Column(f"saved/min, worst L (≤ {SAVED_TARGET})", "right", "ratio"),
            Column(f"time/none at L={deepest}", "right", "ratio"),
            Column("time/none, worst L", "right", "ratio"),
            Column("time target"),
            Column("verdict"),
        ],
        caption=f"✓/✗ only where the ratio's spread is within ±{s.target_spread:.0%} and its "
        "band clears the target; otherwise inconclusive",
        kind="targets",
    )
    for t in targets(report.results, s.target_spread):
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


def warning(data: dict[str, Any]) -> str:
    """The load warning of a `bench.json`, judged against the cores it records."""
    machine = data.get("machine") or {}
    return load_warning(machine.get("load_average_1min") or {}, machine.get("cpus"))


def document(data: dict[str, Any], *, full: bool = True) -> Document:
    """The bench as `bench.md` has it (`full`: its settings, modes and definitions too; the
    terminal shows the tables and what needs saying)."""
    report = from_json(data)
    s = report.settings
    head: list[Any] = []
    if full:
        versions = "; ".join(
            f"{name}: " + ", ".join(f"{k} {v}" for k, v in found.items())
            for name, found in report.versions.items()
        )
        cpus = (data.get("machine") or {}).get("cpus")
        load = report.load
        said = (
            f" (1-minute load average {load['before']:.1f} before, {load['after']:.1f} after)"
            if {"before", "after"} <= set(load)
            else ""
        )
        head.append(
            Paragraph(
                f"Depths {', '.join(map(str, s.depths))}; {s.repeats} interleaved repeats; "
                f"seed {s.seed}; {report.seconds:.0f} s wall on {cpus} CPUs{said}. "
                f"Versions: {versions}."
            )
        )
    found = warning(data)
    if found:
        head.append(Paragraph(f"Warning: {found}", "warn"))
    head += [Paragraph(f"Skipped {name}: {reason}.") for name, reason in report.skipped.items()]
    if full:
        modes = "; ".join(f"{m}: {t}" for m, t in mode_titles().items())
        head.append(Paragraph(f"Modes: {modes}."))
    sections = [
        Section("", (*head, results_table(report))),
        Section("Targets (checkpoint per block)", (targets_table(report),)),
    ]
    if full:
        items = tuple(f"{key}: {text}" for key, text in definitions().items())
        sections.append(Section("Definitions", (Items("", items),)))
    return Document("bench", "Bench", tuple(sections))
