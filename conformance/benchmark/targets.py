"""The bench's verdicts: the issue's targets per line (a checkpoint per block), each time
ratio judged against its spread, and whether the machine was too loaded to trust the times."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..tables.kinds.spread import with_spread
from .measure import SAVED_TARGET, TIME_TARGET, Result, verdict

# How a verdict reads, with or without colour.
VERDICT_MARKS = {"met": "✓", "missed": "✗", "inconclusive": "inconclusive"}


def ratio_with_spread(result: Result, target: float = 0.05) -> str:
    """`1.31 ±2%`: the median ratio and its spread; `!` marks a spread over the target,
    `±?` an unknown one (a single repeat)."""
    if result.time_ratio is None:
        return "-"
    if result.mode == "none":  # the baseline's ratio to itself is 1 by definition
        return "1"
    spread = result.time_ratio_spread
    mark = "!" if spread is None or spread > target else ""
    return with_spread(result.time_ratio, spread, ".2f") + mark


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


def target_ratio(target: dict[str, Any], which: str) -> str:
    # `1.31 ±2% (n=11)`: a target's ratio with what it rests on.
    ratio = target[f"time_ratio_{which}"]
    if ratio is None:
        return "-"
    spread = target[f"time_ratio_{which}_spread"]
    n = target[f"time_ratio_{which}_n"]
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
