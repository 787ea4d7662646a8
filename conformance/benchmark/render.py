"""The bench's outputs: a Markdown table, a terminal table, the targets, and a PNG plot."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from implementations.bench_case import MODES

from ..terminal.style import print_table
from .measure import SAVED_TARGET, TIME_TARGET, Result, definitions, mode_titles, verdict
from .plot import plot as draw

if TYPE_CHECKING:
    from rich.console import Console

    from . import BenchReport

MIB = 2**20

# (Markdown header, terminal header): the terminal's are short to fit 80 columns.
COLUMNS = (
    ("L", "L"),
    ("stack", "stack"),
    ("mode", "mode"),
    ("saved MiB", "saved"),
    ("saved/min", "xmin"),
    ("XLA temp MiB", "temp"),
    ("peak MiB", "peak"),
    ("matmuls", "mm"),
    ("n", "n"),
    ("step ms", "ms"),
    ("time/none", "xnone"),
)
# How a verdict reads, with or without colour.
VERDICT_MARKS = {"met": "✓", "missed": "✗", "inconclusive": "inconclusive"}
VERDICT_MARKUP = {
    "met": "[green]✓[/]",
    "missed": "[red]✗[/]",
    "inconclusive": "[yellow]inconclusive[/]",
}


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / MIB:.2f}"


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _order(result: Result) -> tuple:
    return (result.depth, result.framework, result.variant, MODES.index(result.mode))


def rows(results: Sequence[Result]) -> list[list[str]]:
    """One row of cells per result, ordered by depth, then framework, variant and mode."""
    table = []
    for r in sorted(results, key=_order):
        step = None if r.step_median is None else r.step_median * 1e3
        table.append(
            [
                str(r.depth),
                f"{r.framework} {r.variant}".strip(),
                r.mode,
                _mib(r.saved_bytes),
                f"{r.saved_ratio:.2f}",
                _mib(r.temp_bytes),
                _mib(r.peak_bytes),
                _number(r.matmuls, "d"),
                str(r.n),
                _with_spread(step, r.step_spread, ".2f"),
                ratio_with_spread(r),
            ]
        )
    return table


def _with_spread(value: float | None, spread: float | None, spec: str) -> str:
    # `12.30 ±4%`; `±?` when one repeat cannot say how far to trust it.
    if value is None:
        return "-"
    return f"{format(value, spec)} ±{'?' if spread is None else format(spread, '.0%')}"


def ratio_with_spread(result: Result, target: float = 0.05) -> str:
    """`1.31 ±2%`: the median ratio and its spread; `!` marks a spread over the target,
    `±?` an unknown one (a single repeat)."""
    if result.time_ratio is None:
        return "-"
    if result.mode == "none":  # the baseline's ratio to itself is 1 by definition
        return "1"
    spread = result.time_ratio_spread
    mark = "!" if spread is None or spread > target else ""
    return _with_spread(result.time_ratio, spread, ".2f") + mark


def targets(results: Sequence[Result], target_spread: float = 0.05) -> list[dict[str, Any]]:
    """The issue's targets for each framework and variant, with a checkpoint per block.

    **Returns:** per line: the worst saved/min ratio over all depths, the
    time ratio at the deepest L (where compute, not dispatch, dominates) and
    the worst over all depths, each with its spread and n, the time target
    and where it applies (the deepest L, or every L for a line its stack
    holds to a target at every L: `Result.time_target_every_depth`), and
    the verdicts: saved bytes are exact, so met or not; a time ratio is
    `measure.verdict`ed against its spread (`time_verdict`: met, missed or
    inconclusive; `time_target_met` is True, False, or None when inconclusive).
    """
    found = []
    lines = sorted({(r.framework, r.variant) for r in results if r.mode == "full"})
    for framework, variant in lines:
        mine = sorted(
            (
                r
                for r in results
                if (r.framework, r.variant, r.mode) == (framework, variant, "full")
            ),
            key=lambda r: r.depth,
        )
        saved = max(r.saved_ratio for r in mine)
        timed = [r for r in mine if r.time_ratio is not None]
        deepest = mine[-1]
        worst = max(timed, key=lambda r: r.time_ratio) if timed else None
        own = mine[-1].time_target_every_depth
        every_l = own is not None
        target = TIME_TARGET if own is None else own
        judged = timed if every_l else [deepest]
        verdicts = [
            verdict(r.time_ratio, r.time_ratio_spread, target, target_spread) for r in judged
        ]
        # Every L: one depth clearly over misses; all clearly under meet.
        if "missed" in verdicts:
            time_verdict = "missed"
        elif verdicts and all(v == "met" for v in verdicts):
            time_verdict = "met"
        else:
            time_verdict = "inconclusive"
        found.append(
            {
                "line": mine[0].label,
                "saved_ratio_worst": saved,
                "saved_target_met": saved <= SAVED_TARGET,
                "time_ratio_deepest": deepest.time_ratio,
                "time_ratio_deepest_spread": deepest.time_ratio_spread,
                "time_ratio_deepest_n": deepest.n,
                "time_ratio_worst": None if worst is None else worst.time_ratio,
                "time_ratio_worst_spread": None if worst is None else worst.time_ratio_spread,
                "time_ratio_worst_n": None if worst is None else worst.n,
                "time_target": target,
                "time_target_at": "every L" if every_l else "deepest L",
                "time_target_spread": target_spread,
                "time_verdict": time_verdict,
                "time_target_met": {"met": True, "missed": False}.get(time_verdict),
            }
        )
    return found


def markdown(report: BenchReport) -> str:
    """The whole report as Markdown: settings, the table, the targets, the definitions."""
    s = report.settings
    versions = "; ".join(
        f"{name}: " + ", ".join(f"{k} {v}" for k, v in found.items())
        for name, found in report.versions.items()
    )
    lines = [
        f"# Bench: L blocks of Dense({s.features}) -> relu -> Dense({s.features}), batch {s.batch}",
        "",
        f"Depths {', '.join(map(str, s.depths))}; {s.repeats} interleaved repeats; seed {s.seed}; "
        f"{report.seconds:.0f} s wall on {os.cpu_count()} CPUs"
        + (
            f" (1-minute load average {report.load['before']:.1f} before, "
            f"{report.load['after']:.1f} after)"
            if {"before", "after"} <= set(report.load)
            else ""
        )
        + f". Versions: {versions}.",
        "",
    ]
    warning = load_warning(report)
    if warning:
        lines += [f"**Warning:** {warning}", ""]
    for name, reason in report.skipped.items():
        lines.append(f"Skipped {name}: {reason}.")
    if report.skipped:
        lines.append("")
    lines.append("Modes: " + "; ".join(f"`{m}`: {t}" for m, t in mode_titles().items()) + ".")
    lines.append("")
    lines += _markdown_table([c[0] for c in COLUMNS], rows(report.results))
    lines += ["", "## Targets (checkpoint per block)", ""]
    target_rows = [
        [
            t["line"],
            f"{t['saved_ratio_worst']:.2f} {'✓' if t['saved_target_met'] else '✗'}",
            target_ratio(t, "deepest"),
            target_ratio(t, "worst"),
            f"≤ {t['time_target']} at {t['time_target_at']}: {VERDICT_MARKS[t['time_verdict']]}",
        ]
        for t in targets(report.results, s.target_spread)
    ]
    header = [
        "line",
        f"saved/min, worst L (≤ {SAVED_TARGET})",
        f"time/none at L={max(s.depths)}",
        "time/none, worst L",
        "time target",
    ]
    lines += _markdown_table(header, target_rows)
    lines += ["", "## Definitions", ""]
    lines += [f"- **{key}**: {text}" for key, text in definitions().items()]
    return "\n".join(lines) + "\n"


def target_ratio(target: dict[str, Any], which: str) -> str:
    # `1.31 ±2% (n=11)`: a target's ratio with what it rests on.
    ratio = target[f"time_ratio_{which}"]
    if ratio is None:
        return "-"
    spread = target[f"time_ratio_{which}_spread"]
    n = target[f"time_ratio_{which}_n"]
    return f"{_with_spread(ratio, spread, '.2f')} (n={n})"


def load_warning(report: BenchReport) -> str:
    """A sentence when the 1-minute load average exceeded the cores, before or after; else ''."""
    cores = os.cpu_count() or 1
    loads = {k: v for k, v in report.load.items() if v == v}  # NaN: no load average here
    over = {k: v for k, v in loads.items() if v > cores}
    if not over:
        return ""
    said = ", ".join(f"{v:.1f} {k}" for k, v in loads.items())
    return (
        f"the machine was loaded (1-minute load average {said}, over its {cores} cores): "
        "other processes shared the CPUs, so the times are noisy; read them with their spreads"
    )


def _markdown_table(header: list[str], body: list[list[str]]) -> list[str]:
    numeric = [i for i in range(len(header)) if all(_is_number(row[i]) for row in body)]
    rule = ["---:" if i in numeric else "---" for i in range(len(header))]
    return ["| " + " | ".join(row) + " |" for row in (header, rule, *body)]


def _is_number(cell: str) -> bool:
    return cell == "-" or cell.replace(".", "", 1).isdigit()


def print_report(report: BenchReport, console: Console) -> None:
    """The table and the targets, for a terminal."""
    from rich.table import Table

    s = report.settings
    table = Table(
        title=f"bench · Dense({s.features})→relu→Dense({s.features}) x L · batch {s.batch}",
        caption="saved: residual MiB, parameters left out · xmin: over L·B·F·4 (block inputs) · "
        "temp: XLA compiled temp MiB · "
        "peak: the stack's allocator's peak MiB (definitions) · "
        "mm: matmuls per step · "
        "n: timed repeats · ms: median step ± half its interquartile range, relative · "
        "xnone: median per-repeat time ratio ± half its interquartile range "
        f"(! over ±{s.target_spread:.0%}; ±?: one repeat, spread unknown)",
        box=None,  # no rules: the table fits an 80-column terminal
        padding=(0, 1),
        pad_edge=False,
        header_style="bold",
    )
    for _, column in COLUMNS:
        table.add_column(column, justify="left" if column in ("stack", "mode") else "right")
    previous = None
    for row in rows(report.results):
        if row[0] == previous:
            row = ["", *row[1:]]  # L once per group
        else:
            previous = row[0]
        table.add_row(*row)
    print_table(console, table)
    for t in targets(report.results, s.target_spread):
        saved = "[green]✓[/]" if t["saved_target_met"] else "[red]✗[/]"
        which = "worst" if t["time_target_at"] == "every L" else "deepest"
        console.print(
            f"{t['line']}: saved/min ≤ {SAVED_TARGET}: {t['saved_ratio_worst']:.2f} {saved} · "
            f"time/none ≤ {t['time_target']} at {t['time_target_at']}: "
            f"{target_ratio(t, which)} {VERDICT_MARKUP[t['time_verdict']]}"
        )
    console.print(
        f"[dim]✓/✗ only where the ratio's spread is within ±{s.target_spread:.0%} and its band "
        "clears the target; otherwise inconclusive[/]"
    )
    warning = load_warning(report)
    if warning:
        console.print(f"[yellow]warning[/]: {warning}")


def plot(report: BenchReport, path) -> str | None:
    """Draw the bench into `path` (PNG, `plot`). **Returns:** None or why not."""
    return draw(report, path)
