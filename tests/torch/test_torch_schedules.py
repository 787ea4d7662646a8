"""bench --schedules on eager torch: each declared schedule's values equal the canonical's
(Flax nn.remat_scan), and its placement and forward matmuls meet the model: exactly with
torch's early stop off; with it on, as its count model (`block.early_stop_matmuls`) predicts.
Peaks are judged at the sweep's size, where they are activations (at B = 4, F = 8 they are
the allocator's small change), with every flag the judge raises."""

from __future__ import annotations

import pytest
from torch.utils.checkpoint import set_checkpoint_early_stop

from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import make_data
from implementations.measuring.driver import bench_module
from implementations.schedules import Schedule
from tests.support import schedules_kit as kit

torch_bench = bench_module("implementations.stacks.torch.block")  # the generic driver
jax_bench = kit.canonical()
CASES, IDS = kit.cases(torch_bench)


def _measured(schedule, L, early_stop=True, settings=kit.SMALL):
    with set_checkpoint_early_stop(early_stop):
        case = torch_bench.schedule_case(schedule, make_data(settings, L))
        static = case.measure()
    result = bench.result_of("torch", torch_bench, schedule, static, L, settings)
    bench.check_values(result, torch_bench, jax_bench, schedule, kit.REFERENCES)
    result.flags, result.unexplained_flags = bench.judge(result)
    return result


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_without_early_stop_the_placement_and_counts_are_the_model(schedule, L):
    result = _measured(schedule, L, early_stop=False)
    assert result.values_within, f"{schedule.label}: {result.values_worst} x the bound"
    assert result.regions == result.model_regions
    assert sum(result.forward_matmuls) == result.model_matmuls


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_by_default_at_the_sweep_s_size_every_flag_is_met_by_the_count_model(schedule, L):
    result = _measured(schedule, L, settings=kit.SWEEP)
    assert result.values_within
    assert result.unexplained_flags == [], result.flags
    assert result.departure_measured == result.departure_predicted  # matmuls: exact


def test_early_stop_departs_on_nested_regions_only_and_by_the_count_written_here():
    # nested(2,2,2): 16 forward; each of the 2 outer regions reruns the 2 blocks of its first
    # inner region whole and stops as its last inner region's input is saved (4 each), each
    # of the 4 inner ones its first block whole and its second to relu (3 each):
    # 16 + 2 * 4 + 4 * 3 = 36, where the model has 48 (accepted down to 42)
    nested = _measured(Schedule("nested", (2, 2, 2)), 8, settings=kit.SWEEP)
    assert sum(nested.forward_matmuls) == 36
    assert nested.departure_predicted == {"forward_matmuls": 36}
    assert nested.flags
    assert nested.unexplained_flags == []
    assert not _measured(Schedule("segments", (3,)), 8, settings=kit.SWEEP).flags


def test_a_peak_past_the_model_is_not_excused_by_the_early_stop():
    # the count model predicts matmuls only: a peak flag on nested stays unexplained
    result = _measured(Schedule("nested", (2, 2, 2)), 8, settings=kit.SWEEP)
    result.peak_bytes *= 4
    flags, unexplained = bench.judge(result)
    assert any(f.startswith("peak") for f in unexplained), flags
    assert all("predicts no such figure" in f for f in unexplained if f.startswith("peak"))


def test_the_peak_tells_a_reused_address_from_the_markers():
    from implementations.stacks.torch.instrument import _backward_peak

    M, E, X, K = 0xA0, 0xD0, 0xB0, 0xC0  # the markers' addresses, a reused one, a kept one's
    allocations = [
        (K, 100),  # forward: kept for the backward
        (M, 30), (M, -30),  # a forward temporary where the start marker will be
        (M, 1),  # the start marker: the backward starts with 100 alive
        (X, 64), (X, -64),  # a backward temporary: counted
        (E, 50), (E, -50),  # a backward temporary where the end marker will be: counted
        (X, 16),  # the returned gradient: counted, alive at the end
        (K, -100),
        (E, 1),  # the end marker: the backward has returned
        (X, 400),  # after the backward: not in its peak
    ]  # fmt: skip
    assert _backward_peak(allocations, M, E) == 164  # 100 kept + the 64 temporary
