"""bench --schedules on Paddle dygraph at small L: each declared schedule's values equal the
canonical's (Flax nn.remat_scan) within the stack's bound, its regions are the placement's and
its forward matmuls are the model's exactly (a nested reentrant recompute reruns every level)."""

from __future__ import annotations

import pytest

from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import Settings, make_data
from implementations.schedules import Schedule
from implementations.stacks.paddle import bench as pd_bench

jax_bench = pytest.importorskip("implementations.stacks.jax.bench", reason="the canonical is JAX's")

SETTINGS = Settings(depths=(1, 2, 4, 8), batch=4, features=8, repeats=1, max_repeats=1)
CASES = [
    (schedule, L)
    for L in SETTINGS.depths
    for schedule in bench.schedules_at(L)
    if bench.expresses(pd_bench, schedule)
]


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=[f"{s.label}-L{L}" for s, L in CASES])
def test_a_declared_schedule_equals_the_canonical_and_is_the_model(schedule, L):
    static = pd_bench.schedule_case(schedule, make_data(SETTINGS, L)).measure()
    result = bench.result_of("paddle", pd_bench, schedule, static, L, SETTINGS)
    bench.check_values(result, pd_bench, jax_bench, schedule, {})
    assert result.values_within, f"{schedule.label}: {result.values_worst} x the bound"
    assert result.regions == result.model_regions
    assert sum(result.forward_matmuls) == result.model_matmuls
    assert result.forward_matmuls[0] == 2 * L  # the forward pass runs each block once
    assert static.peak_bytes > 0
    assert "host allocator" in static.peak_method


def test_every_schedule_but_budget_is_declared_and_budget_refused_naming_why():
    assert set(pd_bench.SCHEDULES) == {"none", "every", "segments", "nested", "binomial"}
    with pytest.raises(ValueError, match="not expressible in Paddle"):
        pd_bench.schedule_case(Schedule.parse("budget(0.5)"), make_data(SETTINGS, 2))


def test_the_peak_departs_with_deep_nesting_only_and_is_declared():
    # one level (nested(4,4)) stays within the peak's acceptance; Revolve's deep chain does not
    settings = Settings(depths=(16,), batch=128, features=128, repeats=1, max_repeats=1)

    def peak_flags(label):
        schedule = Schedule.parse(label)
        static = pd_bench.schedule_case(schedule, make_data(settings, 16)).measure()
        result = bench.result_of("paddle", pd_bench, schedule, static, 16, settings)
        return [f for f in bench.judge(result) if f.startswith("peak")]

    assert peak_flags("nested(4,4)") == []
    assert peak_flags("binomial(2)") != []
    assert "binomial" in pd_bench.SCHEDULE_DEPARTURES
