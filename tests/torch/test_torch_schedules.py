"""bench --schedules on eager torch at small L: each declared schedule's values equal the
canonical's (Flax nn.remat_scan), and its placement and forward matmuls meet the model: exactly
with torch's early stop off, within the declared departure with it on."""

from __future__ import annotations

import pytest
from torch.utils.checkpoint import set_checkpoint_early_stop

from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import make_data
from implementations.measuring.driver import bench_module
from tests.support import schedules_kit as kit

torch_bench = bench_module("implementations.stacks.torch.block")  # the generic driver
jax_bench = kit.canonical()
SETTINGS = kit.SMALL
CASES, IDS = kit.cases(torch_bench)


def _measured(schedule, L, early_stop=True):
    with set_checkpoint_early_stop(early_stop):
        case = torch_bench.schedule_case(schedule, make_data(SETTINGS, L))
        static = case.measure()
    result = bench.result_of("torch", torch_bench, schedule, static, L, SETTINGS)
    bench.check_values(result, torch_bench, jax_bench, schedule, kit.REFERENCES)
    # peak bytes at B = 4, F = 8 are the allocator's small change: judged by the bench only
    result.flags = [f for f in bench.judge(result)[0] if not f.startswith("peak")]
    return result


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_without_early_stop_the_placement_and_counts_are_the_model(schedule, L):
    result = _measured(schedule, L, early_stop=False)
    assert result.values_within, f"{schedule.label}: {result.values_worst} x the bound"
    assert result.regions == result.model_regions
    assert sum(result.forward_matmuls) == result.model_matmuls


@pytest.mark.parametrize(("schedule", "L"), CASES, ids=IDS)
def test_by_default_a_departure_has_its_declared_reason(schedule, L):
    result = _measured(schedule, L)
    assert result.values_within
    if result.flags:
        assert schedule.name in torch_bench.SCHEDULE_DEPARTURES, result.flags


def test_early_stop_departs_on_nested_regions_only():
    from implementations.schedules import Schedule

    assert _measured(Schedule("nested", (2, 2, 2)), 8).flags  # inner regions skipped
    assert not _measured(Schedule("segments", (3,)), 8).flags


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
