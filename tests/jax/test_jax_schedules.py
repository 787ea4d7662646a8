"""bench --schedules on JAX at small L (its block and instrument through the generic driver):
each declared schedule's values equal the canonical's (Flax nn.remat_scan), and its forward
matmuls meet the model unless a reason is declared or the compiler removed the schedule."""

from __future__ import annotations

import functools

import pytest

from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import Settings, make_data
from implementations.measuring.driver import bench_module
from implementations.schedules import Schedule
from tests.support import schedules_kit as kit

jax_bench = bench_module("implementations.stacks.jax.block")

SETTINGS = Settings(depths=(2, 8), batch=4, features=8, repeats=1, max_repeats=1)


@functools.cache  # a schedule at a depth is measured once (each compile costs a CPU-second)
def _measured(schedule: Schedule, L: int) -> bench.ScheduleResult:
    case = jax_bench.schedule_case(schedule, make_data(SETTINGS, L))
    result = bench.result_of("jax", jax_bench, schedule, case.measure(), L, SETTINGS)
    bench.check_values(result, jax_bench, jax_bench, schedule, kit.REFERENCES)
    result.flags = bench.judge(result)
    return result


CASES = [
    (schedule, L)
    for L in SETTINGS.depths
    for schedule in bench.schedules_at(L)
    if bench.expresses(jax_bench, schedule)
]


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=[f"{s.label}-L{L}" for s, L in CASES])
def test_a_declared_schedule_equals_the_canonical_and_meets_the_model(schedule, L):
    result = _measured(schedule, L)
    assert result.values_within, f"{schedule.label}: {result.values_worst} x the bound"
    matmul_flags = [f for f in result.flags if "matmuls" in f]
    if schedule.name in jax_bench.SCHEDULE_DEPARTURES:
        return  # its departure is declared with its count or reason
    assert matmul_flags == [], matmul_flags
    assert result.regions == result.model_regions


def test_scan_keeps_the_reruns_every_region_skipping_one_matmul():
    # every: L reruns of x @ W1, each block's a @ W2 skipped (no gradient reads its output)
    result = _measured(Schedule("every"), 8)
    assert result.forward_matmuls == [16, 8]


def test_nested_is_a_scan_per_level_and_reruns_each_level():
    result = _measured(Schedule("nested", (2, 2, 2)), 8)
    assert sum(result.forward_matmuls) == result.model_matmuls  # 3 x 8 block evaluations
    assert "lax.scan" in jax_bench.SCHEDULES["nested"]


def test_budget_is_refused_naming_why():
    with pytest.raises(ValueError, match="not expressible in jax"):
        jax_bench.schedule_case("budget(0.5)", make_data(SETTINGS, 2))


@pytest.mark.parametrize(("label", "L"), [("binomial(2)", 8), ("every", 1), ("segments(2)", 2)])
def test_reruns_xla_cpu_removed_are_not_observable_never_measured(label, L):
    # Unrolled regions (Revolve's uneven ones; a lone region at L = 1): XLA:CPU expands the
    # checkpoint's barriers before HloCSE, which merges the reruns into the forward pass. The
    # traced pullback reruns more forward matmuls than the compiled backward runs.
    result = _measured(Schedule.parse(label), L)
    assert result.forward_matmuls is None
    assert result.peak_bytes is None
    assert result.peak_method.startswith("not observable: XLA:CPU removed the reruns")
    assert "cse_barrier_expander" in result.peak_method
    assert result.values_within
    assert result.regions == result.model_regions
    assert bench.judge(result) == ([], [])
    assert "binomial" not in jax_bench.SCHEDULE_DEPARTURES  # not observed: nothing to explain


@pytest.mark.parametrize("schedule", ["none", "every"])
def test_the_peak_is_the_part_of_xla_temporaries_that_grows_with_the_batch(schedule):
    # At B = F the parameters' gradients are as large as a block's activations, and XLA writes
    # them to its outputs or its temporaries as it sees fit: subtracting them read 0 here.
    settings = Settings(depths=(8,), batch=64, features=64, repeats=1, max_repeats=1)
    parsed = Schedule.parse(schedule)
    case = jax_bench.schedule_case(parsed, make_data(settings, 8))
    result = bench.result_of("jax", jax_bench, parsed, case.measure(), 8, settings)
    assert "temp(2B) - temp(B)" in result.peak_method
    assert [f for f in bench.judge(result) if "peak" in f] == [], result


@pytest.mark.parametrize("label", ["segments(3)", "nested(2,2,2)"])
def test_at_the_sweep_s_size_a_departure_stays_within_its_declared_count(label):
    kit.assert_within_the_model_or_its_count("jax", jax_bench, label, 8)


def test_one_region_s_rerun_is_scheduled_beside_the_tail_and_declared():
    # segments(2): the lone region's rerun needs no cotangent, and XLA runs it while the
    # plain tail is alive: the peak of none, as the declared departure says
    data = make_data(kit.SWEEP, 8)
    one, plain = (
        jax_bench.schedule_case(Schedule.parse(s), data).measure().peak_bytes
        for s in ("segments(2)", "none")
    )
    assert one >= 0.9 * plain
    assert "segments(2) peaks as none does" in jax_bench.SCHEDULE_DEPARTURES["segments"]
