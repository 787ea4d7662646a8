"""bench --schedules on MindSpore PyNative at small L: each declared schedule's values equal the
canonical's (Flax nn.remat_scan) within the stack's bound, its regions are the placement's and
its forward matmuls are the model's exactly (a recomputed cell reruns its whole construct)."""

from __future__ import annotations

import pytest

from implementations.measuring.driver import bench_module
from tests.support import schedules_kit as kit

ms_bench = bench_module("implementations.stacks.mindspore.block")

kit.canonical()
CASES, IDS = kit.cases(ms_bench)


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_a_declared_schedule_equals_the_canonical_and_is_the_model(schedule, L):
    static, result = kit.measured("mindspore", ms_bench, schedule, L)
    kit.assert_the_model_exactly(static, result, "not observable: MindSpore's memory statistics")
    assert static.peak_bytes is None


def test_every_schedule_but_budget_is_declared_and_budget_refused_naming_why():
    assert set(ms_bench.SCHEDULES) == kit.ALL_BUT_BUDGET
    kit.assert_budget_refused(ms_bench, "mindspore")  # the driver names FRAMEWORK
