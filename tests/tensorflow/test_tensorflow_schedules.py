"""bench --schedules on eager TensorFlow at small L: each declared schedule's values equal the
canonical's (Flax nn.remat_scan) within the stack's bound, its regions are the placement's and
its forward matmuls are the model's exactly (nested tf.recompute_grad reruns every block)."""

from __future__ import annotations

import pytest

from implementations.measuring.driver import bench_module
from tests.support import schedules_kit as kit

kit.canonical()
tf_bench = bench_module("implementations.stacks.tensorflow.block")
CASES, IDS = kit.cases(tf_bench)


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_a_declared_schedule_equals_the_canonical_and_is_the_model(schedule, L):
    static, result = kit.measured("tensorflow", tf_bench, schedule, L)
    kit.assert_the_model_exactly(static, result, "grows with B")
    assert static.peak_bytes > 0


def test_every_schedule_but_budget_is_declared_and_budget_refused_naming_why():
    assert set(tf_bench.SCHEDULES) == kit.ALL_BUT_BUDGET
    kit.assert_budget_refused(tf_bench, "tensorflow")


def test_the_cpu_allocator_statistics_leave_out_the_sweep_s_tensors():
    # why the peak is read at larger batches: a 64 KiB activation (B = 256, F = 64) goes
    # uncounted, a 256 KiB one counts
    from implementations.stacks.tensorflow import tf

    memory = tf.config.experimental

    def counted(rows):
        before = memory.get_memory_info("CPU:0")["current"]
        tensor = tf.random.normal((rows, 64))
        grew = memory.get_memory_info("CPU:0")["current"] - before
        del tensor
        return grew

    assert counted(256) == 0  # 64 KiB
    assert counted(1024) == tf_bench.instrument.SEES_FROM == 256 * 1024


#: What even `none` holds at its peak beside the model at the sweep's size (measured: 18 units
#: against 2L = 16): the cotangent pulled back and the gradient being made, which the model's
#: conventions leave out. A placement with regions peaks at its count model's prediction plus
#: exactly this.
OUTSIDE_THE_MODEL_UNITS = 2


@pytest.mark.parametrize("label", ["none", "every", "segments(2)", "nested(2,2,2)", "binomial(2)"])
def test_the_peak_at_the_sweep_s_size_meets_the_model_or_its_declared_count(label):
    from conformance.benchmark import schedules as bench
    from conformance.benchmark.measure import Settings
    from implementations.schedules import Schedule

    settings = Settings(depths=(8,), batch=256, features=64, repeats=1, max_repeats=1)
    _, result = kit.measured("tensorflow", tf_bench, Schedule.parse(label), 8, settings)
    flags, unexplained = bench.judge(result)
    assert unexplained == [], flags
    assert flags == [] or Schedule.parse(label).name in tf_bench.SCHEDULE_DEPARTURES
    if "peak_units" in result.departure_predicted:
        # the count model's prediction, and the measured growing peak beside it
        past = result.departure_measured["peak_units"] - result.departure_predicted["peak_units"]
        assert past == OUTSIDE_THE_MODEL_UNITS, past
