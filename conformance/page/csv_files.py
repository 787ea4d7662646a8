"""`--csv PATH` of `run`, `compare` and `bench`: one row per measured thing, raw numbers.

Unlike the tables on screen, the CSV holds numbers as measured (seconds,
bytes, ratios), one per column, so that a spreadsheet or pandas can sort and
plot them; an unknown value is an empty cell. Every file starts with a
header row. Built from the commands' JSON documents.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .. import outputs
from ..tables.kinds.bench import mode_name
from ..tables.kinds.run import install_command, not_installed
from .facts import backward_matmuls, compare_verdict

RUN_HEADER = [
    "port",
    "framework",
    "state",
    "property",
    "status",
    "examples",
    "worst_ratio",
    "seconds",
    "first_use_seconds",
    "reason",
]
#: A port state as every output names it: `unavailable` is a framework not installed.
STATE_WORDS = {"unavailable": "not installed"}
COMPARE_RESULTS = ("output", "exercise", "w1", "b1", "w2", "b2", "x")
BENCH_HEADER = [
    "framework",
    "variant",
    "mode",
    "depth",
    "batch",
    "features",
    "saved_count",
    "saved_bytes",
    "analytic_minimum",
    "saved_ratio",
    "temp_bytes",
    "peak_bytes",
    "matmuls",
    "n",
    "step_median_seconds",
    "step_q1_seconds",
    "step_q3_seconds",
    "step_spread",
    "time_ratio",
    "time_ratio_q1",
    "time_ratio_q3",
    "time_ratio_spread",
]


def _value(value: Any) -> Any:
    # None: an empty cell (inf and nan stay the strings JSON holds them as).
    return "" if value is None else value


def write(path: str | Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """Write `header` then `rows` to `path` as CSV (UTF-8). **Returns:** the path."""
    path = Path(path)
    # Whole or not at all: a temporary file beside it, renamed once closed.
    with (
        outputs.replacing(path) as temporary,
        temporary.open("w", newline="", encoding="utf-8") as handle,
    ):
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows([_value(v) for v in row] for row in rows)
    return path


def run_rows(run: dict[str, Any]) -> list[list[Any]]:
    """One row per port and property (a port that did not load: one row, no property, and
    why in `reason`: for a port whose framework is not installed, its pip command)."""
    rows = []
    for port in run["ports"]:
        state = port.get("state", "available")
        head = [port["name"], port.get("framework", ""), STATE_WORDS.get(state, state)]
        if not port["outcomes"]:
            reason = install_command(port) if not_installed(port) else port.get("reason", "")
            rows.append([*head, "", "", "", "", port.get("seconds"), "", reason])
        for o in port["outcomes"]:
            rows.append(
                [
                    *head,
                    o["property"],
                    o["status"],
                    o.get("examples"),
                    o.get("worst_ratio"),
                    o.get("seconds"),
                    o.get("first_use_seconds"),
                    "",
                ]
            )
    return rows


def compare_header() -> list[str]:
    diffs = [f"{r}_{k}" for r in COMPARE_RESULTS for k in ("max_abs", "bound", "worst_ratio")]
    bits = [f"{r}_{k}" for r in COMPARE_RESULTS for k in ("bits", "tier_ratio")]
    return [
        "port",
        "framework",
        "state",
        "verdict",
        *diffs,
        *bits,
        "saved_off_count",
        "saved_off_bytes",
        "saved_on_count",
        "saved_on_bytes",
        "backward_matmuls_rerun",
        "warm_forward_seconds",
        "warm_forward_half_iqr_seconds",
        "warm_vjp_seconds",
        "warm_vjp_half_iqr_seconds",
        "warm_vjp_method",
        "warm_samples",
        "matmul_default",
        "matmul_pinned",
    ]


def compare_rows(compare: dict[str, Any]) -> list[list[Any]]:
    """One row per port: every difference and bound, bits, residual totals, times."""
    rows = []
    for row in compare["ports"]:
        grads = row.get("gradients") or {}
        found = {"output": row.get("output"), "exercise": row.get("exercise"), **grads}
        diffs = []
        for name in COMPARE_RESULTS:
            d = found.get(name) or {}
            diffs += [d.get("max_abs"), d.get("bound"), d.get("worst_ratio")]
        bits = []
        for name in COMPARE_RESULTS:
            b = (row.get("precision") or {}).get(name) or {}
            bits += [b.get("bits"), b.get("ratio")]
        residuals = row.get("residuals") or {}
        saved = []
        for setting in ("off", "on"):
            r = residuals.get(setting) or {}
            saved += [r.get("count"), r.get("bytes")]
        setting = row.get("matmul_precision") or {}
        spread = row.get("warm_spread") or {}
        rows.append(
            [
                row["name"],
                row.get("framework", ""),
                row.get("state"),
                compare_verdict(row),
                *diffs,
                *bits,
                *saved,
                backward_matmuls(row),
                row.get("warm_forward_seconds"),
                spread.get("forward"),
                row.get("warm_vjp_seconds"),
                spread.get("vjp"),
                row.get("warm_vjp_method", ""),
                row.get("warm_samples"),
                setting.get("default"),
                setting.get("pinned"),
            ]
        )
    return rows


def bench_rows(bench: dict[str, Any]) -> list[list[Any]]:
    """One row per configuration and depth, with n and quartiles of its times."""
    rows = []
    for r in bench["results"]:
        step = r.get("step_quartiles") or [None] * 3
        ratio = r.get("time_ratio_quartiles") or [None] * 3
        rows.append(
            [
                r["framework"],
                r["variant"],
                mode_name(r["mode"]),
                r["depth"],
                r["batch"],
                r["features"],
                r["saved_count"],
                r["saved_bytes"],
                r["analytic_minimum"],
                r.get("saved_ratio"),
                r.get("temp_bytes"),
                r.get("peak_bytes"),
                r.get("matmuls"),
                r.get("n", len(r.get("step_seconds") or [])),
                r.get("step_median"),
                step[0],
                step[2],
                r.get("step_spread"),
                r.get("time_ratio"),
                ratio[0],
                ratio[2],
                r.get("time_ratio_spread"),
            ]
        )
    return rows


def write_run(path: str | Path, run: dict[str, Any]) -> Path:
    return write(path, RUN_HEADER, run_rows(run))


def write_compare(path: str | Path, compare: dict[str, Any]) -> Path:
    return write(path, compare_header(), compare_rows(compare))


def write_bench(path: str | Path, bench: dict[str, Any]) -> Path:
    return write(path, BENCH_HEADER, bench_rows(bench))
