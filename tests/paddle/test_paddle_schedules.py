"""bench --schedules on Paddle dygraph at small L: each declared schedule's values equal the
canonical's (Flax nn.remat_scan) within the stack's bound, its regions are the placement's and
its forward matmuls are the model's exactly (a nested reentrant recompute reruns every level)."""

from __future__ import annotations

import pytest

from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import Settings
from implementations.measuring.driver import bench_module
from implementations.schedules import Schedule
from tests.support import schedules_kit as kit

pd_bench = bench_module("implementations.stacks.paddle.block")
kit.canonical()
CASES, IDS = kit.cases(pd_bench)


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_a_declared_schedule_equals_the_canonical_and_is_the_model(schedule, L):
    static, result = kit.measured("paddle", pd_bench, schedule, L)
    kit.assert_the_model_exactly(static, result, "host allocator")
    assert static.peak_bytes > 0


def test_every_schedule_but_budget_is_declared_and_budget_refused_naming_why():
    assert set(pd_bench.SCHEDULES) == kit.ALL_BUT_BUDGET
    kit.assert_budget_refused(pd_bench, "paddle")


def test_the_peak_departs_with_deep_nesting_only_within_its_declared_count():
    # one level (nested(4,4)) stays within the peak's acceptance; Revolve's deep chain does
    # not, and its departure's count (2 units an open region) explains it
    settings = Settings(depths=(16,), batch=128, features=128, repeats=1, max_repeats=1)

    def peak_flags(label):
        schedule = Schedule.parse(label)
        _, result = kit.measured("paddle", pd_bench, schedule, 16, settings)
        flags, unexplained = bench.judge(result)
        return [f for f in flags if f.startswith("peak")], unexplained

    assert peak_flags("nested(4,4)") == ([], [])
    flagged, unexplained = peak_flags("binomial(2)")
    assert flagged
    assert unexplained == []
    assert set(pd_bench.SCHEDULE_DEPARTURES["binomial"].predicts) == {"peak_units"}
