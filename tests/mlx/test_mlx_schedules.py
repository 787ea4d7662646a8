"""bench --schedules on MLX at small L: each declared schedule's values equal the canonical's
(Flax nn.remat_scan) within the stack's bound, its regions are the placement's, and its forward
matmuls are within the model's acceptance (a rerun's last a @ W2, which no gradient reads, is
left out of MLX's graph)."""

from __future__ import annotations

import pytest

from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import Settings, make_data
from implementations.schedules import Schedule
from implementations.stacks.mlx import bench as mlx_bench

jax_bench = pytest.importorskip("implementations.stacks.jax.bench", reason="the canonical is JAX's")

SETTINGS = Settings(depths=(1, 2, 4, 8), batch=4, features=8, repeats=1, max_repeats=1)
CASES = [
    (schedule, L)
    for L in SETTINGS.depths
    for schedule in bench.schedules_at(L)
    if bench.expresses(mlx_bench, schedule)
]


def _measured(schedule: Schedule, L: int) -> bench.ScheduleResult:
    static = mlx_bench.schedule_case(schedule, make_data(SETTINGS, L)).measure()
    result = bench.result_of("mlx", mlx_bench, schedule, static, L, SETTINGS)
    bench.check_values(result, mlx_bench, jax_bench, schedule, {})
    return result


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=[f"{s.label}-L{L}" for s, L in CASES])
def test_a_declared_schedule_equals_the_canonical_and_meets_the_model(schedule, L):
    result = _measured(schedule, L)
    assert result.values_within, f"{schedule.label}: {result.values_worst} x the bound"
    assert result.regions == result.model_regions
    assert result.forward_matmuls[0] == 2 * L  # the forward pass runs each block once
    assert result.least_matmuls <= sum(result.forward_matmuls) <= result.model_matmuls


def test_every_reruns_x_at_w1_only():
    # each block's rerun keeps x @ W1 (W1's gradient reads relu's output); a @ W2 is dead
    assert _measured(Schedule("every"), 8).forward_matmuls == [16, 8]


def test_the_peak_departure_is_declared_for_every_schedule_and_budget_refused():
    assert set(mlx_bench.SCHEDULE_DEPARTURES) == set(mlx_bench.SCHEDULES)
    with pytest.raises(ValueError, match="not expressible in MLX"):
        mlx_bench.schedule_case(Schedule.parse("budget(0.5)"), make_data(SETTINGS, 2))
