"""The compare report's facts in words and counts, for the CSV (`csv_files`) and the pictures
(`pictures`): the verdict's words (`compare_verdict`), whether an op is a matmul, and the
matmuls the backward pass reruns. The page's tables are `conformance.tables.kinds`'."""

from __future__ import annotations

from typing import Any

from ..tables.numbers import number


def _within(diff: dict[str, Any] | None) -> bool | None:
    if not diff:
        return None
    worst = number(diff.get("worst_ratio"))
    return worst is not None and worst <= 1.0


def is_matmul(op: str) -> bool:
    """A matrix product, by any framework's name for it (dot_general, aten.addmm, MatMul)."""
    low = op.lower()
    return "dot" in low or low.endswith("mm") or "matmul" in low or "addmm" in low


def backward_matmuls(row: dict[str, Any]) -> int | None:
    """Matmuls the backward pass reruns with the checkpoint on (from `recomputed`)."""
    on = (row.get("residuals") or {}).get("on")
    if not on:
        return None
    return sum(n for op, n in (on.get("recomputed") or {}).items() if is_matmul(op))


def compare_verdict(row: dict[str, Any]) -> str:
    """✓ when every result is within its bound and every precision tier passes; else ✗ why."""
    if row.get("state") != "available":
        return f"{row.get('state')}: {row.get('reason', '')}"
    if row.get("error"):
        return f"✗ error: {row['error']}"
    if row.get("reference"):
        return "reference"
    over = [
        name
        for name, diff in [
            ("output", row.get("output")),
            ("exercise", row.get("exercise")),
            *(row.get("gradients") or {}).items(),
        ]
        if _within(diff) is False
    ]
    tier = [k for k, b in (row.get("precision") or {}).items() if (number(b["ratio"]) or 0) > 1]
    if over or tier:
        return "✗ " + "; ".join(
            ([f"over the bound: {', '.join(over)}"] if over else [])
            + ([f"precision tier: {', '.join(tier)}"] if tier else [])
        )
    return "✓ within bounds, float32 precision"
