"""bench --schedules on HIPS autograd at small L: each declared schedule's values equal the
canonical's (Flax nn.remat_scan) within the stack's bound, its regions are the placement's and
its forward matmuls are the model's exactly (the deferred checkpoint retraces a region's
every block)."""

from __future__ import annotations

import pytest

from conformance.benchmark.measure import make_data
from implementations.measuring.driver import bench_module
from implementations.schedules import Schedule
from tests.support import schedules_kit as kit

kit.canonical()
ag_bench = bench_module("implementations.stacks.autograd.block")
CASES, IDS = kit.cases(ag_bench)


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_a_declared_schedule_equals_the_canonical_and_is_the_model(schedule, L):
    static, result = kit.measured("autograd", ag_bench, schedule, L)
    kit.assert_the_model_exactly(static, result, "tracemalloc")
    assert static.peak_bytes > 0


def test_one_primitive_runs_every_region():
    # autograd keeps each primitive for good: a case must not make new ones
    from autograd.core import primitive_vjps

    ag_bench.schedule_case(Schedule("every"), make_data(kit.SMALL, 2)).values()
    before = len(primitive_vjps)
    ag_bench.schedule_case(Schedule("nested", (2, 2, 2)), make_data(kit.SMALL, 8)).values()
    assert len(primitive_vjps) == before


def test_every_schedule_but_budget_is_declared_and_budget_refused_naming_why():
    assert set(ag_bench.SCHEDULES) == kit.ALL_BUT_BUDGET
    kit.assert_budget_refused(ag_bench, "autograd")


@pytest.mark.parametrize("label", ["segments(3)", "nested(2,2,2)", "binomial(2)"])
def test_at_the_sweep_s_size_a_departure_stays_within_its_declared_count(label):
    kit.assert_within_the_model_or_its_count("autograd", ag_bench, label, 8)
