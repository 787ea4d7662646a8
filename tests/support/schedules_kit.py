"""What every stack's `bench --schedules` test does at small L: the cases its bench module
declares, each measured and its values held to the canonical's (Flax `nn.remat_scan`), and
the refusal of a schedule it cannot express. The canonical is JAX's: a test module using this
kit skips where JAX is not installed (`canonical()`)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import Settings, make_data
from implementations.schedules import Schedule

#: Small enough for the test command: L up to 8, B = 4, F = 8.
SMALL = Settings(depths=(1, 2, 4, 8), batch=4, features=8, repeats=1, max_repeats=1)
#: The canonical's values and bound per depth and nesting, made once per test process: each a
#: JAX compile (0.3 s), which every stack's test module would otherwise make again.
REFERENCES: dict = {}
#: Every schedule name but `budget`, which no eager stack's own API has.
ALL_BUT_BUDGET = {"none", "every", "segments", "nested", "binomial", "optimal"}


def canonical() -> ModuleType:
    """JAX's block module (the canonical's `canonical_values`), or the calling test module skips."""
    return pytest.importorskip("implementations.stacks.jax.block", reason="the canonical is JAX's")


def cases(module: Any, settings: Settings = SMALL) -> tuple[list, list[str]]:
    """`(schedule, L)` for every schedule the module declares at each depth, and their ids."""
    found = [
        (schedule, L)
        for L in settings.depths
        for schedule in bench.schedules_at(L)
        if bench.expresses(module, schedule)
    ]
    return found, [f"{s.label}-L{L}" for s, L in found]


def measured(
    framework: str, module: Any, schedule: Schedule, L: int, settings: Settings = SMALL
) -> tuple[Any, bench.ScheduleResult]:
    """The case's instruments (`ScheduleStatic`) and its result, values checked."""
    static = module.schedule_case(schedule, make_data(settings, L)).measure()
    result = bench.result_of(framework, module, schedule, static, L, settings)
    bench.check_values(result, module, canonical(), schedule, REFERENCES)
    return static, result


def assert_budget_refused(module: Any, says: str) -> None:
    """`budget(b)` is refused before anything runs, naming the framework."""
    with pytest.raises(ValueError, match=f"not expressible in {says}"):
        module.schedule_case(Schedule.parse("budget(0.5)"), make_data(SMALL, 2))


def assert_the_model_exactly(static: Any, result: bench.ScheduleResult, method: str) -> None:
    """Values within the bound, the placement's regions, the model's matmuls exactly (the
    forward pass running each block once), and a peak by the named method."""
    assert result.values_within, f"{result.schedule}: {result.values_worst} x the bound"
    assert result.regions == result.model_regions
    assert sum(result.forward_matmuls) == result.model_matmuls
    assert result.forward_matmuls[0] == 2 * result.depth
    assert method in static.peak_method


#: The sweep's own batch and width (`bench --schedules`' defaults), where peaks are activations
#: and not the allocators' small change: a declared count is checked there.
SWEEP = Settings(depths=(8,), batch=256, features=64, repeats=1, max_repeats=1)


def assert_within_the_model_or_its_count(framework: str, module: Any, label: str, L: int) -> None:
    """At the sweep's size, the schedule's figures are within the model's acceptance or
    explained by the departure the module declares, within the count it states."""
    _, result = measured(framework, module, Schedule.parse(label), L, SWEEP)
    flags, unexplained = bench.judge(result)
    assert unexplained == [], flags


def measured_internals(module: Any) -> float:
    """A stack's a as its instrument measures it: `none`'s peak grows 1 + a units a block
    (read at L = 2 and 4, B = 256, F = 64), the value its block's `INTERNALS_UNITS` declares
    for `python -m conformance plan`."""
    from implementations.measuring.driver import ScheduleCase
    from implementations.measuring.placement import Placement

    settings, peaks = Settings(depths=(2, 4), batch=256, features=64), {}
    for L in settings.depths:
        case = ScheduleCase(module, Placement(tuple(range(L))), make_data(settings, L), "none")
        peaks[L] = case.measure().peak_bytes
    return (peaks[4] - peaks[2]) / 2 / (256 * 64 * 4) - 1
