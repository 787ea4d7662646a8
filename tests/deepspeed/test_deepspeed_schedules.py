"""bench --schedules on DeepSpeed at small L: each declared schedule's values equal the
canonical's (Flax nn.remat_scan) within the stack's bound, its regions are the placement's and
its forward matmuls are the model's exactly (a nested reentrant checkpoint reruns every level)."""

from __future__ import annotations

import pytest

from implementations.measuring.driver import bench_module
from tests.support import schedules_kit as kit

kit.canonical()
ds_bench = bench_module("implementations.stacks.deepspeed.block")
CASES, IDS = kit.cases(ds_bench)


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_a_declared_schedule_equals_the_canonical_and_is_the_model(schedule, L):
    static, result = kit.measured("deepspeed", ds_bench, schedule, L)
    kit.assert_the_model_exactly(static, result, "profiler")
    assert static.peak_bytes > 0


def test_every_schedule_but_budget_is_declared_and_budget_refused_naming_why():
    assert set(ds_bench.SCHEDULES) == kit.ALL_BUT_BUDGET
    kit.assert_budget_refused(ds_bench, "deepspeed")


@pytest.mark.parametrize("label", ["nested(2,2,2)", "binomial(2)"])
def test_at_the_sweep_s_size_a_departure_stays_within_its_declared_count(label):
    kit.assert_within_the_model_or_its_count("deepspeed", ds_bench, label, 8)
