"""`python -m conformance bench --policies`: every expressible remat policy on the batched
stacks, at one depth or a few: time over no remat, and saved bytes over the analytic minimum.

The stacks are the depth bench's (each stack's bench module, named by its
manifest): L blocks `Linear -> relu -> Linear`, batch B, width F, the step the
VJP of the stack. Each bench module declares the policies it runs
(`POLICIES`, spelled as its ports spell them), those it cannot express with
the reason (`NOT_EXPRESSIBLE`), and builds a case per policy
(`policy_case`; without one, its depth case for `none` and `full`).

Saved bytes come from each framework's instrument, as in the depth bench.
They are exact: one measurement, no spread. Time is the median of
per-repeat ratios to the same framework's `none`, all cases of a depth
timed interleaved, with n and the interquartile range. Where a stack runs
`activation_memory_budget`-style budgets (`budget(b)`), the table says
whether saved bytes never rise as the budget falls.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from implementations.bench_case import Data, Static
from implementations.contract import SavedTensor

from ..jsonable import to_data
from ..running import timing
from ..tables.kinds import bench_policies as policy_tables
from ..tables.render import markdown as markdown_render
from . import measure
from .measure import Settings

#: The depth the policy bench runs at unless `--depths` says otherwise.
DEPTHS = (8,)


@dataclass
class PolicyResult:
    """One framework, variant and policy at one depth."""

    framework: str
    variant: str
    policy: str
    depth: int
    batch: int
    features: int
    saved_count: int
    saved_bytes: int
    analytic_minimum: int
    matmuls: int | None
    residuals: list[dict[str, Any]]
    step_seconds: list[float] = field(default_factory=list)
    time_ratios: list[float] = field(default_factory=list)

    @property
    def saved_ratio(self) -> float:
        return self.saved_bytes / self.analytic_minimum

    @property
    def time_ratio(self) -> float | None:
        return statistics.median(self.time_ratios) if self.time_ratios else None

    @property
    def time_ratio_quartiles(self) -> tuple[float, float] | None:
        """The first and third quartiles of the per-repeat ratios (None under 4 repeats)."""
        if len(self.time_ratios) < 4:
            return None
        q1, _, q3 = statistics.quantiles(self.time_ratios, n=4)
        return q1, q3

    @property
    def label(self) -> str:
        head = f"{self.framework} {self.variant}" if self.variant else self.framework
        return f"{head} · {self.policy}"

    def to_json(self) -> dict[str, Any]:
        data = to_data(self)
        data.update(
            label=self.label,
            saved_ratio=self.saved_ratio,
            time_ratio=self.time_ratio,
            time_ratio_quartiles=self.time_ratio_quartiles,
            n=len(self.time_ratios),
        )
        return data


def builder(module: Any) -> Callable[[str, Data], Any]:
    """How a bench module builds a case per policy: its `policy_case`, else its first
    variant's depth case (for none and full)."""
    own = getattr(module, "policy_case", None)
    if own is not None:
        return own

    def build(policy: str, data: Data):
        variant = module.configurations()[0][0]
        return module.build(variant, policy, data)

    return build


def policies_of(module: Any) -> tuple[str, ...]:
    """The policies a bench module runs (none where it declares none)."""
    return tuple(getattr(module, "POLICIES", ()))


def with_policies(
    frameworks: dict[str, ModuleType],
) -> tuple[dict[str, ModuleType], dict[str, str]]:
    """Split bench modules into those that declare policies and those skipped, with why."""
    kept = {name: module for name, module in frameworks.items() if policies_of(module)}
    skipped = {
        name: "its bench module declares no POLICIES, so the policy bench has no case for it"
        for name in frameworks
        if name not in kept
    }
    return kept, skipped


# ---------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------


def total_steps(settings: Settings, frameworks: dict[str, ModuleType]) -> int:
    cases = sum(len(policies_of(module)) for module in frameworks.values())
    return len(settings.depths) * cases * (1 + settings.repeats)


def run(
    settings: Settings,
    frameworks: dict[str, ModuleType],
    *,
    progress: Callable[[str, int], None] | None = None,
) -> tuple[list[PolicyResult], dict[str, str]]:
    """Measure every policy of every framework at each depth, then time them interleaved.

    **Returns:** `(results, failed: label -> error)`; a policy whose case fails to build or
    measure is reported, not dropped silently.
    """
    notify = progress or (lambda description, advance: None)
    results: list[PolicyResult] = []
    failed: dict[str, str] = {}
    for depth in settings.depths:
        data = measure.make_data(settings, depth)
        cases, depth_results = [], []
        for name, module in frameworks.items():
            build = builder(module)
            for policy in policies_of(module):
                label = f"L={depth} {name} · {policy}"
                notify(label, 0)
                try:
                    case = build(policy, data)
                    static = case.measure()
                except Exception as error:  # one policy's failure is reported, not fatal
                    failed[label] = f"{type(error).__name__}: {error}"
                    notify("", 1 + settings.repeats)
                    continue
                depth_results.append(_result(name, case, policy, static, depth, settings))
                cases.append(case)
                notify("", 1)
        notify(f"L={depth} timing, interleaved", 0)
        samples = timing.time_interleaved(
            [case.step for case in cases],
            settings.repeats,
            on_sample=lambda: notify("", 1),
            seed=settings.seed + depth,
        )
        attach_timings(depth_results, samples)
        results.extend(depth_results)
        del cases
    return results, failed


def _result(
    name: str, case: Any, policy: str, static: Static, depth: int, settings: Settings
) -> PolicyResult:
    kept = [t for t in static.saved if t.origin in SavedTensor.KEPT]
    return PolicyResult(
        framework=name,
        variant=case.variant,
        policy=policy,
        depth=depth,
        batch=settings.batch,
        features=settings.features,
        saved_count=len(kept),
        saved_bytes=sum(t.nbytes for t in kept),
        analytic_minimum=measure.analytic_minimum(depth, settings.batch, settings.features),
        matmuls=static.matmuls,
        residuals=measure.summarise_residuals(static.saved),
    )


def attach_timings(results: Sequence[PolicyResult], samples: Sequence[list[float]]) -> None:
    """Each result's samples, and its per-repeat ratios to its own framework's `none`."""
    measure.attach_timings(
        results,
        samples,
        group=lambda r: (r.framework, r.depth),
        is_baseline=lambda r: r.policy == "none",
    )


def budget_monotone(results: Sequence[PolicyResult]) -> dict[tuple[str, int], bool | None]:
    """Per framework with budgets and depth: do saved bytes never rise as the budget falls?
    (None: fewer than two budgets measured.)"""
    verdicts: dict[tuple[str, int], bool | None] = {}
    budgeted = sorted({r.framework for r in results if r.policy.startswith("budget(")})
    for framework in budgeted:
        for depth in sorted({r.depth for r in results}):
            budgets = sorted(
                (float(r.policy[len("budget(") : -1]), r.saved_bytes)
                for r in results
                if r.framework == framework and r.depth == depth and r.policy.startswith("budget(")
            )
            if len(budgets) < 2:
                verdicts[framework, depth] = None
                continue
            saved = [b for _, b in budgets]
            verdicts[framework, depth] = all(low <= high for low, high in itertools.pairwise(saved))
    return verdicts


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------


def report_data(
    settings: Settings,
    frameworks: dict[str, Any],
    results: Sequence[PolicyResult],
    failed: dict[str, str],
    *,
    skipped: dict[str, str] | None = None,
    load: dict[str, float] | None = None,
    seconds: float = 0.0,
) -> dict[str, Any]:
    """The sweep as `bench-policies.json` holds it (`kind` "bench-policies")."""
    return {
        "kind": "bench-policies",
        "settings": to_data(settings),
        "policies": {name: policies_of(module) for name, module in frameworks.items()},
        "not_run": {
            name: dict(getattr(module, "NOT_EXPRESSIBLE", {}))
            for name, module in frameworks.items()
        },
        "failed": failed,
        "skipped": skipped or {},
        "versions": {
            name: module.versions()
            for name, module in frameworks.items()
            if hasattr(module, "versions")
        },
        "budget_saved_bytes_never_rise_as_budget_falls": {
            f"{framework} L={depth}": verdict
            for (framework, depth), verdict in budget_monotone(results).items()
        },
        "load_average_1min": load or {},
        "wall_seconds": seconds,
        "results": [r.to_json() for r in results],
    }


def markdown(data: dict[str, Any]) -> str:
    """The policy table, what could not run and why, and the budget verdicts, as Markdown."""
    return markdown_render.document(policy_tables.document(data))
