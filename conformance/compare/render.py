"""The `compare` tables: one row per port, and every residual (fit 80 columns)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from implementations.contract import SavedTensor

from ..reporting.terminal_style import narrow_table, state_markup
from .measure import Bits, Comparison, Diff, PortComparison
from .policy_matrix import policy_table


def _seconds(value: float | None) -> str:
    # Three significant figures at most: these are noisy measurements.
    if value is None:
        return "-"
    if value < 1e-3:
        return f"{value * 1e6:.0f}µs"
    if value < 1e-2:
        return f"{value * 1e3:.2f}ms"
    if value < 1:
        return f"{value * 1e3:.0f}ms"
    return f"{value:.2f}s"


def _bytes(value: int) -> str:
    if value < 1024:
        return f"{value} B"
    if value < 2**20:
        return f"{value / 1024:.1f} KiB"
    return f"{value / 2**20:.2f} MiB"


def _diff(d: Diff | None, name: str) -> str:
    # Two lines: the largest difference, then the bound at that element.
    if d is None:
        return f"{name} -"
    colour = "green" if d.worst_ratio <= 1.0 else "bold red"
    return f"{name} [{colour}]{d.max_abs:.1e}[/]\n[dim]≤ {d.bound:.1e}[/]"


def _dtype(name: str) -> str:
    name = name.removeprefix("torch.")
    return {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16"}.get(
        name, name
    )


def residual_list(saved: Sequence[dict[str, Any]]) -> str:
    """Residuals one per line as `(shape) dtype origin`, parameters summed up on one line."""
    lines = [
        f"{tuple(t['shape'])} {_dtype(t['dtype'])} {t['origin']}"
        for t in saved
        if t["origin"] in SavedTensor.KEPT
    ]
    for origin, label in (("parameter", "params"), ("constant", "constants")):
        group = [t for t in saved if t["origin"] == origin]
        if group:
            nbytes = sum(t["bytes"] for t in group)
            lines.append(f"[dim]+ {len(group)} {label}, {_bytes(nbytes)}[/]")
    return "\n".join(lines) or "nothing"


def summary_table(comparison: Comparison):
    """One row per port: accuracy, residual totals, times, versions (fits 80 columns)."""
    table = narrow_table(
        title=f"compare · seed {comparison.seed} · D={comparison.dim} F={comparison.features} "
        f"· against {comparison.canonical}",
        caption="output, gradients: largest |port - canonical| (fwd: shared params; ex: the "
        "exercise, own init; worst gradient), then the bound at that element (red: over it) · "
        "saved: residuals kept, count · KiB, parameters left out · warm: median per call, "
        "a new seed each call, all ports interleaved (alone: in a process of its own, where its "
        "stack cannot share one: Keras keeps one backend per process) · "
        "first call: fresh process, no compilation cache",
    )
    # Every cell is a few short lines; only the port column may wrap (long versions).
    table.add_column("port", min_width=14)
    for column in ("output", "gradients", "saved", "warm", "first call"):
        table.add_column(column, no_wrap=True)
    for row in comparison.ports:
        versions = "\n".join(f"[dim]{k} {v}[/]" for k, v in row.versions.items())
        label = f"[bold]{row.name}[/]\n{versions}" if versions else row.name
        if row.state != "available" or row.error:
            why = f"{state_markup(row.state)}: {row.reason}" if not row.error else row.error
            table.add_row(label, why, "", "", "", "", end_section=True)
            continue
        if row.reference:
            accuracy = ["[dim]reference[/]", "[dim]reference[/]"]
        else:
            worst = row.worst_gradient
            accuracy = [
                _diff(row.output, "fwd") + "\n" + _diff(row.exercise, "ex"),
                _diff(worst[1], f"d{worst[0]}") if worst else "-",
            ]
        saved = "\n".join(
            f"{label} {r.count} · {r.bytes / 1024:.1f}" for label, r in row.residuals.items()
        )
        warm = f"fwd {_seconds(row.warm_forward_seconds)}\nvjp {_seconds(row.warm_vjp_seconds)}"
        if row.timed_alone:
            warm += "\n[dim]alone[/]"
        first = row.first_call
        if "error" in first:
            first_cell = f"[red]{first['error']}[/]"
        elif first:
            first_cell = "\n".join(
                f"{label} {_seconds(first[key])}"
                for label, key in (("import", "import"), ("fwd", "forward"), ("vjp", "vjp"))
            )
        else:
            first_cell = "[dim]skipped[/]"
        table.add_row(label, *accuracy, saved, warm, first_cell, end_section=True)
    return table


# The results the precision table shows (d/db2 = c needs no arithmetic: always exact).
PRECISION_COLUMNS = (("fwd", "output"), ("ex", "exercise"), ("dw1", "w1"), ("db1", "b1"),
                     ("dw2", "w2"), ("dx", "x"))  # fmt: skip


def _bits(b: Bits | None) -> str:
    if b is None:
        return "-"
    text = "exact" if b.bits == float("inf") else f"{b.bits:.1f}"
    return f"[bold red]{text}[/]" if b.ratio > 1.0 else text


def _setting(value: str) -> str:
    # A setting's name, without the framework's explanation after it.
    return value.split(" (", 1)[0]


def _matmul(row: PortComparison) -> str:
    found = row.matmul_precision
    if not found:
        return "-"
    default, pinned = (_setting(found.get(key, "-")) for key in ("default", "pinned"))
    lines = [f"[dim]default[/] {default}", f"[dim]pinned[/]  {pinned}"]
    if "device" in found:
        lines.append(f"[dim]on {found['device']}[/]")
    return "\n".join(lines)


def precision_table(comparison: Comparison):
    """One row per port: effective bits of each result, and the float32 matmul setting."""
    table = narrow_table(
        title="precision: bits of the exact (float64) result each port keeps",
        caption="fwd: forward, shared params · ex: the exercise, own init · gradients · float32 "
        "arithmetic reads 19-24 bits, TF32 and float16 about 11, bfloat16 8 (red: fails the "
        "precision tier) · matmul: the framework's float32 matmul setting as it reports it, "
        "its default (without the suite's pin) and the pin; on a CPU both compute float32",
    )
    table.add_column("port", min_width=14)
    for label, _ in PRECISION_COLUMNS:
        table.add_column(label, justify="right", no_wrap=True)
    table.add_column("matmul", no_wrap=True)
    for row in comparison.ports:
        if row.state != "available" or row.error:
            continue
        cells = [_bits(row.precision.get(key)) for _, key in PRECISION_COLUMNS]
        table.add_row(row.name, *cells, _matmul(row), end_section=True)
    return table


def residual_table(comparison: Comparison):
    """One row per port and checkpoint setting: every residual, and what is recomputed."""
    table = narrow_table(
        title="residuals: what the backward pass keeps, from each framework's own instrument",
        caption="kept: count · bytes, parameters left out; checkpoint regions found · "
        "recomputed: forward ops the backward pass runs again",
    )
    table.add_column("port", min_width=14)
    table.add_column("ckpt")
    table.add_column("kept", no_wrap=True)
    table.add_column("saved: shape dtype origin", min_width=24)
    table.add_column("recomputed", no_wrap=True)
    for row in comparison.ports:
        for label, r in row.residuals.items():
            recomputed = "\n".join(f"{op} x{n}" for op, n in sorted(r.recomputed.items()))
            regions = "" if r.checkpoint_regions is None else f"\n{r.checkpoint_regions} regions"
            table.add_row(
                row.name if label == "off" else "",
                label,
                f"{r.count} · {_bytes(r.bytes)}{regions}",
                residual_list(r.saved),
                recomputed or "[dim]nothing[/]",
                end_section=label == "on",
            )
    return table


def print_comparison(comparison: Comparison, console) -> None:
    """The tables, and the wall time."""
    console.print(summary_table(comparison))
    console.print(precision_table(comparison))
    console.print(residual_table(comparison))
    console.print(policy_table(comparison.ports))
    console.print(f"compare: {comparison.seconds:.1f}s wall")
