"""bench --schedules on DeepSpeed at small L: each declared schedule's values equal the
canonical's (Flax nn.remat_scan) within the stack's bound, its regions are the placement's and
its forward matmuls are the model's exactly (a nested reentrant checkpoint reruns every level)."""

from __future__ import annotations

import dataclasses

import pytest

from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import make_data
from implementations.measuring.driver import PlacedCase, bench_module, split_peak
from implementations.measuring.placement import Placement
from implementations.schedules import Schedule
from tests.support import schedules_kit as kit

kit.canonical()
ds_bench = bench_module("implementations.stacks.deepspeed.block")
UNIT = kit.SWEEP.batch * kit.SWEEP.features * 4
CASES, IDS = kit.cases(ds_bench)


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_a_declared_schedule_equals_the_canonical_and_is_the_model(schedule, L):
    static, result = kit.measured("deepspeed", ds_bench, schedule, L)
    kit.assert_the_model_exactly(static, result, "profiler")
    assert static.peak_bytes > 0


def test_every_schedule_but_budget_is_declared_and_budget_refused_naming_why():
    assert set(ds_bench.SCHEDULES) == kit.ALL_BUT_BUDGET
    kit.assert_budget_refused(ds_bench, "deepspeed")


def test_at_the_sweep_s_size_a_departure_stays_within_its_declared_count():
    kit.assert_within_the_model_or_its_count("deepspeed", ds_bench, "nested(2,2,2)", 8)


def test_past_its_count_binomial_s_peak_is_its_fixed_part_the_batch_part_within():
    # The peak (x's gradient, as every stack's) counts what does not grow with the batch: two
    # RNG states per region and per open level, and the parameters' gradients DeepSpeed's
    # backward makes although x's alone is asked, held by each open level (4.5 units at
    # B = 256, F = 64). The departure counts units: the part that grows is within it.
    label, L = "binomial(2)", 8
    _, result = kit.measured("deepspeed", ds_bench, Schedule.parse(label), L, kit.SWEEP)
    _, unexplained = bench.judge(result)
    assert [f.split(" units")[0] for f in unexplained] == [f"peak {result.peak_bytes / UNIT:.2f}"]
    cases = (
        PlacedCase(
            ds_bench,
            Placement.of(label, L),
            make_data(dataclasses.replace(kit.SWEEP, batch=batch), L),
        )
        for batch in (kit.SWEEP.batch, 2 * kit.SWEEP.batch)
    )
    split = split_peak(*cases, wrt="x")
    assert split.peak_bytes == result.peak_bytes
    predicted = bench.PEAK_HIGH * result.departure_peak_bytes + bench.PEAK_SLACK_UNITS * UNIT
    assert split.peak_batch_bytes <= predicted < split.peak_bytes
