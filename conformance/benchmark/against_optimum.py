"""`bench --schedules`' measured points against the true optimum (`implementations.optimum`).

Per framework, its a is its bench module's `INTERNALS_UNITS` (read without importing it), else
1. A measured point at E block evaluations and peak P units lies on or above the optimum when
P is at least the optimum's least peak within E evaluations. E is the model's count where the
measured forward matmuls lie within the bench's acceptance (a rerun that skips its region's
last a @ W2 still evaluates that block: docs/SCHEDULES.md, convention 2), else the measured
matmuls / 2. A ratio P / optimum below `LEAST_RATIO` is an instrument or model defect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from implementations.optimum import optimal_frontier

from ..tables.kinds.bench_schedules import evaluations_of
from .plan import declared

#: Below this, a measured point beats the optimum: an instrument or model defect.
LEAST_RATIO = 0.95


@dataclass(frozen=True)
class AgainstOptimum:
    """One measured row against the optimum at its evaluations."""

    framework: str
    schedule: str
    depth: int
    a: float
    evaluations: float
    peak_units: float
    optimum_units: float

    @property
    def ratio(self) -> float:
        return self.peak_units / self.optimum_units


def internals_of(framework: str) -> float:
    """The framework's a: its declared `INTERNALS_UNITS`, else 1 (also for a name no bench
    module has: a recorded JSON may name a framework since renamed)."""
    try:
        found = declared(framework).internals_units
    except (KeyError, ModuleNotFoundError, ValueError):
        found = None
    return 1.0 if found is None else found


def against(data: dict[str, Any], depth: int | None = None) -> list[AgainstOptimum]:
    """Every observed row at `depth` (the deepest when None) against the optimum."""
    rows = [r for r in data.get("results") or [] if r.get("peak_bytes") is not None]
    if not rows:
        return []
    depth = max(r["depth"] for r in rows) if depth is None else depth
    settings = data["settings"]
    unit = settings["batch"] * settings["features"] * 4
    found = []
    for row in (r for r in rows if r["depth"] == depth):
        evaluations = evaluations_of(row)
        if evaluations is None:
            continue
        a = internals_of(row["framework"])
        fitting = [p.peak for p in optimal_frontier(depth, a) if p.evaluations <= evaluations]
        if not fitting:  # fewer evaluations than blocks: the optimum has no point there
            continue
        found.append(
            AgainstOptimum(
                row["framework"],
                row["schedule"],
                depth,
                a,
                evaluations,
                row["peak_bytes"] / unit,
                min(fitting),
            )
        )
    return found


def below(data: dict[str, Any], depth: int | None = None) -> list[AgainstOptimum]:
    """The rows whose peak lies below `LEAST_RATIO` times the optimum's."""
    return [r for r in against(data, depth) if r.ratio < LEAST_RATIO]
