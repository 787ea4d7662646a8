"""The bench's verdicts: the issue's targets per line (a checkpoint per block), each time
ratio judged against its spread (`bench.json`'s `targets`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .measure import SAVED_TARGET, TIME_TARGET, Result, verdict


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
