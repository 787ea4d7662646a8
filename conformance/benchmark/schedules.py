"""`python -m conformance bench --schedules`: where to recompute, per framework, against the
analytic model (`implementations.schedules`) and Revolve's optimum.

Each bench module that declares `SCHEDULES` (`implementations/bench_case.py`) builds the
depth-L stack with its regions where a schedule places them (`schedule_case`). Per framework,
schedule and depth the sweep records:

- values: the output and gradients against the canonical's (`canonical_values`, Flax's
  `nn.remat_scan`) within the stack's error-analysis bound (`schedule_values`), on one row;
- forward matmuls in the forward and the backward pass (two per block evaluation) against the
  model's `2 * forward_evaluations(L)`: accepted down to one a @ W2 fewer per region (a rerun
  may skip its region's last one, whose output no gradient needs: docs/SCHEDULES.md, 2);
- peak bytes of the backward pass (its instrument named) against the model's peak: accepted
  from `PEAK_LOW` times the model to `PEAK_HIGH` times it plus `PEAK_SLACK_UNITS` units (the
  output, the cotangent and the working values of the block run, which the model leaves out
  as the same for every schedule, and masks a framework keeps beside);
- step time: the median of interleaved repeats, its interquartile range and n.

A figure outside its acceptance is flagged. A flag is explained only where the framework
declares a count model for the schedule (`SCHEDULE_DEPARTURES`, each an
`implementations.measuring.departure.CountModel`, or a `schedules.Departure` that states its
count) that predicts that figure, and the measured figure meets the prediction within the
same acceptance (`PEAK_LOW` to `PEAK_HIGH` times it plus `PEAK_SLACK_UNITS` units; matmuls
from the prediction less one per region to it). A reason in words explains nothing. Values
off the canonical's, and regions other than the placement's, are never explained. Each row
carries its departure's predicted and measured figures. `bench --schedules` fails on any
unexplained flag.

The peak compared with the model is the part that grows with the batch, where the instrument
splits it (`peak(2B) - peak(B)`, `implementations.measuring.driver`): the model counts
activations, not the fixed bytes (RNG states, a runtime's buffers) shown apart.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from implementations import manifests
from implementations.measuring.departure import count_model
from implementations.optimum import optimal_frontier
from implementations.schedules import (
    UNIT_BYTES,
    Schedule,
    regions,
    revolve_frontier,
    sqrt_segments,
)

from ..jsonable import to_data
from ..running import timing
from . import measure, schedule_values
from .measure import Settings

DEPTHS = (1, 2, 4, 8, 16, 32, 64)
THOROUGH_DEPTHS = (*DEPTHS, 128, 256)
REPEATS = 5
BATCH = 256  # the sweep's default batch (the depth bench's is 1024): ratios do not depend on B
#: The sweep's default width: a block's activations (x_i and a, 2*B*F) are then four times its
#: parameters (2*F*F), as a stack that needs a schedule has them, and the slowest CPU backends
#: (MLX's, MindSpore's: seconds per step at F = 256, L = 64) finish the sweep in minutes.
FEATURES = 64
SNAPSHOTS = (2, 4, 8)  # binomial(c) run at every depth where c < L - 1
PEAK_LOW, PEAK_HIGH, PEAK_SLACK_UNITS = 0.9, 1.25, 4
SCHEMA = 1  # bench-schedules.json's own version: fields only ever added under it
#: The deepest L whose values are checked. Deeper, each schedule's check is a compile of the
#: canonical's Flax construction and of JAX's own program at one row, unrolled where a
#: placement's regions differ: at L = 64 binomial(2)'s took 128 s (JAX's) and 40 s (the
#: canonical's) on a loaded machine, most of the sweep's time (issue 77). The placement code is
#: the same at every L.
VALUES_DEPTH = 16


def schedules_at(L: int) -> tuple[Schedule, ...]:
    """The schedules run at depth L: none, every, Chen's sqrt(L) segments, remat_scan's
    two-level and binary nestings, Revolve with a few snapshot counts."""
    found = [Schedule("none"), Schedule("every")]
    root = sqrt_segments(L)
    if root.args[0] >= 2:
        found.append(root)
    power = int(math.log2(L)) if L & (L - 1) == 0 else 0
    if power >= 2:
        outer = 2 ** ((power + 1) // 2)
        found.append(Schedule("nested", (outer, L // outer)))
    if power >= 3:
        found.append(Schedule("nested", (2,) * power))
    found += [Schedule("binomial", (c,)) for c in SNAPSHOTS if c < L - 1]
    return tuple(found)


def expresses(module: Any, schedule: Schedule) -> bool:
    """Whether a bench module declares the schedule (by its label or by its name)."""
    declared = getattr(module, "SCHEDULES", {})
    return schedule.label in declared or schedule.name in declared


def with_schedules(frameworks: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Split bench modules into those that declare schedules and those skipped, with why."""
    kept = {name: m for name, m in frameworks.items() if getattr(m, "SCHEDULES", None)}
    skipped = {
        name: "its bench module declares no SCHEDULES, so the schedule bench has no case for it"
        for name in frameworks
        if name not in kept
    }
    return kept, skipped


@dataclass
class ScheduleResult:
    """One framework and schedule at one depth."""

    framework: str
    schedule: str
    depth: int
    batch: int
    features: int
    forward_matmuls: list[int] | None
    model_matmuls: int
    least_matmuls: int
    peak_bytes: int | None  # the part that grows with the batch, where the instrument splits it
    peak_method: str
    model_peak_bytes: int
    regions: int | None
    model_regions: int
    values_within: bool | None
    values_worst: float | None
    values_not_checked: str = ""  # why the values could not be checked (with `values_within` null)
    peak_fixed_bytes: int | None = None  # the part that does not grow, apart from the model
    departure: str | None = None
    departure_reference: str | None = None
    departure_predicted: dict[str, float] = field(default_factory=dict)
    departure_measured: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    unexplained_flags: list[str] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)

    @property
    def matmul_ratio(self) -> float | None:
        return (
            None if self.forward_matmuls is None else sum(self.forward_matmuls) / self.model_matmuls
        )

    @property
    def peak_ratio(self) -> float | None:
        return None if self.peak_bytes is None else self.peak_bytes / self.model_peak_bytes

    def to_json(self) -> dict[str, Any]:
        data = to_data(self)
        quartiles = None
        if len(self.step_seconds) >= 4:
            q1, _, q3 = statistics.quantiles(self.step_seconds, n=4)
            quartiles = [q1, q3]
        data.update(
            matmul_ratio=self.matmul_ratio,
            peak_ratio=self.peak_ratio,
            step_median=statistics.median(self.step_seconds) if self.step_seconds else None,
            step_quartiles=quartiles,
            n=len(self.step_seconds),
        )
        return data


def measured_figures(result: ScheduleResult) -> dict[str, float]:
    """The figures a count model may predict, as measured (those the instrument saw)."""
    found: dict[str, float] = {}
    if result.forward_matmuls is not None:
        found["forward_matmuls"] = sum(result.forward_matmuls)
    if result.peak_bytes is not None:
        found["peak_units"] = result.peak_bytes / (result.batch * result.features * 4)
    return found


def peak_acceptance(units: float) -> tuple[float, float]:
    """A peak in units is accepted from `PEAK_LOW` times `units` to `PEAK_HIGH` times it plus
    `PEAK_SLACK_UNITS` (the output, the cotangent and the block run's working values)."""
    return PEAK_LOW * units, PEAK_HIGH * units + PEAK_SLACK_UNITS


def judge(result: ScheduleResult) -> tuple[list[str], list[str]]:
    """What departs from the model beyond its acceptance, each said in a line, and those of
    them the declared count model does not explain: every flag but one whose figure it
    predicts and the measurement meets (a reason in words explains none)."""
    found, unexplained = [], []
    predicted, measured = result.departure_predicted, measured_figures(result)

    def flag(text: str, figure: str | None, low: float = 0.0, high: float = 0.0) -> None:
        if figure is not None and figure in predicted:
            met = low <= measured[figure] <= high
            text += f"; its departure predicts {predicted[figure]:.4g}" + (
                "" if met else f", accepted {low:.4g} to {high:.4g}: missed"
            )
        elif result.departure is not None and figure is not None:
            met = False
            text += (
                "; its departure predicts no such figure"
                if predicted
                else "; its departure is a reason in words, which excuses nothing"
            )
        else:
            met = False
        found.append(text)
        if not met:
            unexplained.append(text)

    if result.values_within is False:
        flag(f"values off the canonical's by {result.values_worst:.3g} x the bound", None)
    if "forward_matmuls" in measured:
        total = measured["forward_matmuls"]
        if not result.least_matmuls <= total <= result.model_matmuls:
            count = result.model_matmuls - result.least_matmuls  # one per region
            wanted = predicted.get("forward_matmuls", 0)
            flag(
                f"forward matmuls {total:g} outside the model's "
                f"{result.least_matmuls} to {result.model_matmuls}",
                "forward_matmuls",
                wanted - count,
                wanted,
            )
    if result.regions is not None and result.regions != result.model_regions:
        flag(f"regions entered {result.regions}, the placement has {result.model_regions}", None)
    if "peak_units" in measured:
        unit = result.batch * result.features * 4
        model = result.model_peak_bytes / unit
        low, high = peak_acceptance(model)
        if not low <= measured["peak_units"] <= high:
            flag(
                f"peak {measured['peak_units']:.2f} units outside {low:.2f} to {high:.2f} "
                f"(model {model:g})",
                "peak_units",
                *peak_acceptance(predicted.get("peak_units", 0.0)),
            )
    return found, unexplained


def result_of(
    name: str, module: Any, schedule: Schedule, static: Any, depth: int, settings: Settings
) -> ScheduleResult:
    """A measured case against the schedule's model at `depth`."""
    placement = schedule.placement(depth)
    count = sum(1 for _ in regions(placement))
    model = schedule.model(depth)
    declared = getattr(module, "SCHEDULE_DEPARTURES", {})
    declared = declared.get(schedule.label, declared.get(schedule.name))
    departure = None if declared is None else count_model(declared)
    result = ScheduleResult(
        framework=name,
        schedule=schedule.label,
        depth=depth,
        batch=settings.batch,
        features=settings.features,
        forward_matmuls=None if static.forward_matmuls is None else list(static.forward_matmuls),
        model_matmuls=2 * model.forwards,
        least_matmuls=2 * model.forwards - count,
        peak_bytes=static.peak_bytes,
        peak_fixed_bytes=getattr(static, "peak_fixed_bytes", None),
        peak_method=static.peak_method,
        model_peak_bytes=model.peak.bytes(settings.batch, settings.features),
        regions=static.regions,
        model_regions=count,
        values_within=None,
        values_worst=None,
        departure=None if departure is None else departure.reason,
        departure_reference=None if departure is None else departure.reference,
        departure_predicted={} if departure is None else departure.predict(placement),
    )
    if departure is not None:  # the measured figure beside every predicted one
        seen = measured_figures(result)
        result.departure_measured = {f: seen[f] for f in result.departure_predicted if f in seen}
    return result


def check_values(
    result: ScheduleResult, module: Any, canonical: Any, schedule: Schedule, cache: dict
) -> None:
    """The schedule's values on the values data against the canonical's, into `result`
    (`cache`: the canonical's values and the bound per depth and lengths, made once). Without
    the canonical in the run the check cannot run: `result` says why (`values_not_checked`)."""
    if canonical is None:
        result.values_not_checked = values_not_checked()
        return
    data = schedule_values.values_data(result.depth)
    key = (result.depth, schedule.label)  # each schedule its own Flax construction
    if key not in cache:
        cache[key] = (canonical.canonical_values(schedule, data), schedule_values.bounds(data))
    reference, bound = cache[key]
    verdict = schedule_values.compare(
        module.schedule_case(schedule, data).values(), reference, bound
    )
    result.values_within, result.values_worst = verdict.within, verdict.worst


def values_too_deep() -> str:
    """Why a row deeper than `VALUES_DEPTH` has no values verdict."""
    return (
        f"not checked: values are checked at L = {VALUES_DEPTH} and less (every schedule of "
        "every framework); deeper, each check compiles the canonical's Flax construction and "
        "JAX's program at one row, minutes of the sweep"
    )


def values_not_checked() -> str:
    """Why a sweep without the canonical's bench module checks no values, and what adds it."""
    manifest, _ = manifests.port(manifests.CANONICAL_PORT)
    names = " ".join(f"--framework {entry.name}" for entry in manifest.bench)
    return (
        f"not checked: the reference values come from the canonical "
        f"({manifests.CANONICAL_PORT}, Flax's nn.remat_scan), whose framework is not in this "
        f"run (add {names})"
    )


def total_steps(depths: tuple[int, ...], frameworks: dict[str, Any], repeats: int) -> int:
    cases = sum(
        sum(expresses(m, s) for s in schedules_at(L)) for L in depths for m in frameworks.values()
    )
    return cases * (1 + repeats)


def run(
    settings: Settings,
    frameworks: dict[str, Any],
    *,
    progress: Callable[[str, int], None] | None = None,
) -> tuple[list[ScheduleResult], dict[str, str]]:
    """Measure every declared schedule per framework and depth, then time a depth's cases
    interleaved. **Returns:** `(results, failed: label -> error)`."""
    notify = progress or (lambda description, advance: None)
    canonical = next((m for m in frameworks.values() if hasattr(m, "canonical_values")), None)
    results: list[ScheduleResult] = []
    failed: dict[str, str] = {}
    references: dict = {}
    for depth in settings.depths:
        data = measure.make_data(settings, depth)
        cases, mine = [], []
        for name, module in frameworks.items():
            for schedule in schedules_at(depth):
                if not expresses(module, schedule):
                    continue
                label = f"L={depth} {name} · {schedule.label}"
                notify(label, 0)
                try:
                    case = module.schedule_case(schedule, data)
                    result = result_of(name, module, schedule, case.measure(), depth, settings)
                    if depth <= VALUES_DEPTH:
                        check_values(result, module, canonical, schedule, references)
                    else:
                        result.values_not_checked = values_too_deep()
                except Exception as error:  # one schedule's failure is reported, not fatal
                    failed[label] = f"{type(error).__name__}: {error}"
                    notify("", 1 + settings.repeats)
                    continue
                result.flags, result.unexplained_flags = judge(result)
                mine.append(result)
                cases.append(case)
                notify("", 1)
        notify(f"L={depth} timing, interleaved", 0)
        samples = timing.time_interleaved(
            [case.step for case in cases],
            settings.repeats,
            on_sample=lambda: notify("", 1),
            seed=settings.seed + depth,
            warm_up=False,  # each case's step ran (compiled) as it was measured
        )
        for result, seconds in zip(mine, samples, strict=True):
            result.step_seconds = list(seconds)
        results.extend(mine)
        del cases  # free this depth's programs and arrays before the next
    return results, failed


def report_data(
    settings: Settings,
    frameworks: dict[str, Any],
    results: list[ScheduleResult],
    failed: dict[str, str],
    *,
    skipped: dict[str, str] | None = None,
    load: dict[str, float] | None = None,
    seconds: float = 0.0,
) -> dict[str, Any]:
    """The sweep as `bench-schedules.json` holds it (`kind` "bench-schedules")."""
    return {
        "kind": "bench-schedules",
        "schema": SCHEMA,
        "settings": to_data(settings),
        "acceptance": {
            "matmuls": "from 2 x forward_evaluations(L) less one per region, to 2 x it",
            "peak": f"from {PEAK_LOW} x the model to {PEAK_HIGH} x it + {PEAK_SLACK_UNITS} units",
            "values": "within the stack's error-analysis bound (tolerance.py, chained), B = 1",
            "departures": "a count model explains a figure it predicts when the measurement "
            f"meets the prediction: a peak from {PEAK_LOW} x to {PEAK_HIGH} x it + "
            f"{PEAK_SLACK_UNITS} units, matmuls from it less one per region to it; a reason in "
            "words explains nothing; none explains values or regions",
        },
        "schedules": {name: dict(m.SCHEDULES) for name, m in frameworks.items()},
        "not_expressible": {
            name: dict(getattr(m, "SCHEDULES_NOT_EXPRESSIBLE", {}))
            for name, m in frameworks.items()
        },
        "departures": {name: departures_of(m) for name, m in frameworks.items()},
        "frontier": frontier_data(settings),
        "optimum": optimum_data(settings, frameworks),
        "failed": failed,
        "skipped": skipped or {},
        "values_not_checked": not_checked(results),
        "versions": {n: m.versions() for n, m in frameworks.items() if hasattr(m, "versions")},
        "load_average_1min": load or {},
        "wall_seconds": seconds,
        "results": [r.to_json() for r in results],
    }


def departures_of(module: Any) -> dict[str, str]:
    """A bench module's declared departures, each said in a line (what it predicts and its
    reference, or that it is words)."""
    declared = getattr(module, "SCHEDULE_DEPARTURES", {})
    return {schedule: str(count_model(why)) for schedule, why in declared.items()}


def frontier_data(settings: Settings) -> dict[str, list[dict[str, int]]]:
    """Revolve's frontier at each depth: per snapshot count, peak bytes and forward
    evaluations (the limit the pictures draw)."""
    return {
        str(L): [
            {
                "snapshots": p.snapshots,
                "peak_bytes": p.peak.bytes(settings.batch, settings.features),
                "forwards": p.forwards,
            }
            for p in revolve_frontier(L)
        ]
        for L in settings.depths
    }


def optimum_data(settings: Settings, frameworks: dict[str, Any]) -> dict[str, Any]:
    """The true optimal frontier (`implementations.optimum`) at the deepest depth, per
    framework at its a (its bench module's `INTERNALS_UNITS`, else 1): per point, its peak
    bytes and block evaluations (what each framework's best point is held to)."""
    depth = max(settings.depths)
    found = {}
    for name, module in frameworks.items():
        a = getattr(module, "INTERNALS_UNITS", None)
        a = 1.0 if a is None else a
        points = [
            {
                "peak_bytes": round(p.peak * settings.batch * settings.features * UNIT_BYTES),
                "evaluations": p.evaluations,
            }
            for p in optimal_frontier(depth, a)
        ]
        found[name] = {"a": a, "points": points}
    return {str(depth): found}


def not_checked(results: list[ScheduleResult]) -> dict[str, int]:
    """Each reason a values check could not run, and on how many rows."""
    found: dict[str, int] = {}
    for r in results:
        if r.values_not_checked:
            found[r.values_not_checked] = found.get(r.values_not_checked, 0) + 1
    return found


def unexplained(results: list[ScheduleResult]) -> list[ScheduleResult]:
    """The results with a flag their declared departure does not explain: the checks, and
    `bench --schedules`, fail on these."""
    return [r for r in results if r.unexplained_flags]
