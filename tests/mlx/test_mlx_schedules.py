"""bench --schedules on MLX at small L: each declared schedule's values equal the canonical's
(Flax nn.remat_scan) within the stack's bound, its regions are the placement's, and its forward
matmuls are within the model's acceptance (a rerun's last a @ W2, which no gradient reads, is
left out of MLX's graph)."""

from __future__ import annotations

import pytest

from conformance.benchmark import schedules as bench
from implementations.measuring.driver import bench_module
from implementations.schedules import Schedule
from tests.support import schedules_kit as kit

kit.canonical()
mlx_bench = bench_module("implementations.stacks.mlx.block")
CASES, IDS = kit.cases(mlx_bench)


def _measured(schedule: Schedule, L: int):
    return kit.measured("mlx", mlx_bench, schedule, L)[1]


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_a_declared_schedule_equals_the_canonical_and_meets_the_model(schedule, L):
    result = _measured(schedule, L)
    assert result.values_within, f"{schedule.label}: {result.values_worst} x the bound"
    assert result.regions == result.model_regions
    assert result.forward_matmuls[0] == 2 * L  # the forward pass runs each block once
    assert result.least_matmuls <= sum(result.forward_matmuls) <= result.model_matmuls


def test_every_reruns_x_at_w1_only():
    # each block's rerun keeps x @ W1 (W1's gradient reads relu's output); a @ W2 is dead
    assert _measured(Schedule("every"), 8).forward_matmuls == [16, 8]


def test_no_departure_excuses_mlx_s_peak_and_budget_is_refused():
    # MLX's peak has no count model (block.py: its evaluation order is its own), and a reason
    # in words excuses nothing: none is declared
    assert mlx_bench.SCHEDULE_DEPARTURES == {}
    kit.assert_budget_refused(mlx_bench, "mlx")


def test_mlx_s_whole_peak_reads_not_observable_and_is_not_judged():
    # The model counts the peak's part that grows with the batch; MLX's cannot be split
    # (instrument.PEAK_NOT_SPLIT): the row says so, with the whole peak in the reason, and
    # no peak flag stands on a figure that is not the model's quantity.
    result = _measured(Schedule("every"), 8)
    assert result.peak_bytes is None
    assert result.peak_method.startswith("not observable: MLX evaluates on an asynchronous")
    whole = int(result.peak_method.split("read ")[1].split(" bytes")[0])
    assert whole > 0
    found, _ = bench.judge(result)
    assert not [flag for flag in found if flag.startswith("peak")], found
