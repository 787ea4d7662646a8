"""One meaning per figure, on Paddle: at L = 4, B = 8, F = 4, what the instrument counts around
the very call (block + instrument through the generic driver) equals the analytic count of
each placement, written here in units (one unit: one (B, F) float32 array), never read off a
simulator of the same conventions.

The analytic counts, by hand from the exercise's block `linear(relu(linear(x, W1, b1)), W2, b2)`
under a reentrant `fleet.utils.recompute` per region:

- forward evaluations: the forward pass runs each of the L blocks once; the backward pass
  reruns every block of every region once (`RecomputeFunction.backward` reruns the region's
  whole forward: nothing is pruned). Each evaluation runs both matmuls, none skipped.
- the forward matmuls: 2 per forward evaluation; the backward pass's forward kernels (what
  Paddle's operator statistics see of it): 2 per rerun block. The gradient's own kernels are
  not observable: the statistics count no grad kernel.
- batch-growing saved bytes: a plain block keeps its input x_i (the first matmul's gradient
  reads it) and relu's output a_i (relu's gradient and the second matmul's read it, one
  storage): 2 units; a region keeps its input only (`save_for_backward` of its arguments): 1.
  none: 2L = 8; every: L = 4; segments(2): one region of 2 blocks (1) and a plain tail of 2
  blocks (4): 5.
"""

from __future__ import annotations

import pytest

from conformance.benchmark.schedules import PEAK_HIGH, PEAK_SLACK_UNITS
from implementations.measuring.driver import PlacedCase, bench_module, split_peak
from implementations.measuring.placement import Placement
from implementations.measuring.record import MATMULS, NotObservable
from implementations.schedules import Schedule
from implementations.stacks.paddle.loaded import paddle
from tests.support import measuring_kit as kit

L, B, F = 4, 8, 4
UNIT = B * F * 4
STACK = bench_module("implementations.stacks.paddle.block")

#: placement -> (the blocks the backward pass reruns, in its order: the last region first, each
#: region's blocks in order; regions; batch-growing units saved)
ANALYTIC = {
    "none": ((), 0, 2 * L),
    "every": ((3, 2, 1, 0), L, L),
    "segments(2)": ((0, 1), 1, 1 + 2 * 2),
}


def _case(schedule: str, batch: int = B) -> PlacedCase:
    return kit.placed(STACK, schedule, L, batch, F)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_counts_are_the_analytic_ones(schedule):
    reran, regions, _ = ANALYTIC[schedule]
    record = _case(schedule).counts()
    # every evaluation in the order it ran, each with both matmuls (none skipped)
    expected = [(i, "forward", MATMULS) for i in range(L)]
    expected += [(i, "backward", MATMULS) for i in reran]
    assert [(e.block, e.phase, e.ran) for e in record.evaluations] == expected
    assert record.block_matmuls("backward") == 2 * len(reran)
    assert record.forward_matmuls == 2 * L
    assert record.recomputed == {"matmul_v2": 2 * len(reran)}
    assert (record.regions, record.reruns) == (regions, regions)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_saved_bytes_that_grow_with_the_batch_are_the_analytic_units(schedule):
    *_, units = ANALYTIC[schedule]
    kit.assert_saved_units(_case(schedule), _case(schedule, 2 * B), units, "device")  # the CPU's
    saved = _case(schedule).counts().saved
    assert all(t.role for t in saved if t.origin in ("input", "activation"))  # x, a or y


def test_the_gradients_own_matmuls_read_not_observable_with_the_reason():
    record = _case("every").counts()
    assert isinstance(record.backward_matmuls, NotObservable)
    assert str(record.backward_matmuls).startswith("not observable: ")
    assert "grad" in record.backward_matmuls.reason
    assert record.backward_record().backward_matmuls is None  # as (k) reads it: not reported
    assert isinstance(_case("none").peak().saved, NotObservable)  # the peak watches no hooks


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_peak_to_x_grows_with_the_batch_alone(schedule):
    # With no parameter gradient made, nothing in Paddle's backward peak stays fixed as the
    # batch doubles: no per-region part (torch's CPU RNG state, issue 75) in its allocator.
    record = split_peak(_case(schedule), _case(schedule, 2 * B), wrt="x")
    assert (record.peak_fixed_bytes, record.peak_batch_bytes) == (0, record.peak_bytes)
    assert record.peak_bytes >= ANALYTIC[schedule][2] * UNIT  # at least what it keeps
    assert "2B" in record.methods["peak_fixed_bytes"]


def test_the_peak_is_the_backward_passs_not_what_the_call_allocates_after_it():
    case = _case("every")
    with STACK.instrument.peak() as held:
        case.call()
    alone = held.record().peak_bytes
    with STACK.instrument.peak() as held:
        case.call()
        after = paddle.zeros([64 * B, F])  # 64 units, once the backward pass has returned
    assert held.record().peak_bytes == alone < 64 * UNIT
    del after


def test_the_nested_departure_is_its_count_and_it_holds_the_peak():
    # RecomputeFunction.backward (paddle/distributed/fleet/recompute/recompute.py) differentiates
    # an inner region's rerun while the outer's is open: each level reruns its blocks once
    # more, and each open region holds 2 units beside the model meanwhile (`reentrant_peak`).
    # binomial(2) at L = 4 places [0] [[1] 2] 3: the backward reruns block 0 once, block 1 in
    # the outer region and again in its inner one, block 2 once: 4 evaluations, 3 regions.
    departure = STACK.SCHEDULE_DEPARTURES["binomial"]
    assert departure.predicts == {"peak_units": STACK.block.reentrant_peak}
    assert "recompute.py:376" in departure.reference
    assert set(STACK.SCHEDULE_DEPARTURES) == {"every", "segments", "nested", "binomial"}
    placement = Placement.of("binomial(2)", L)
    # By hand: [0]'s rerun: x0 + its block (2) + 2 held, its input shared: 4; [[1] 2] beside
    # x0 (kept 2 with its own input): inside, [1] reruns to 4, then block 2 beside x1: 4; so
    # 2 + 4 + 2 held - 1 shared = 7; block 3 after it: 4. The peak: 7.
    assert STACK.block.reentrant_peak(placement.items) == 7
    assert str(placement) == "[0] [[1] 2] 3"
    record = _case("binomial(2)").counts()
    assert sorted(e.block for e in record.evaluated("backward")) == [0, 1, 1, 2]
    assert (record.regions, record.reruns) == (3, 3)
    # the schedule bench's peak (the gradient to x), its part growing with the batch, within
    # what the bench accepts of a counted departure (`schedules.judge`)
    split = split_peak(_case("binomial(2)", 64), _case("binomial(2)", 128), wrt="x")
    unit = 64 * F * 4
    predicted = STACK.block.reentrant_peak(placement.items) * unit
    model = Schedule.parse("binomial(2)").model(L).peak.units * unit
    assert model < predicted
    assert split.peak_batch_bytes > model  # above the model (9 units measured, 4 modelled)
    assert split.peak_batch_bytes <= PEAK_HIGH * predicted + PEAK_SLACK_UNITS * unit


def test_a_policy_is_refused_naming_why():
    with pytest.raises(ValueError, match=r"save_dots.*recompute takes no policy"):
        STACK.block.place(Placement.of("every", L, policy="save_dots"))
    assert STACK.block.POLICIES == {}  # declared: recompute takes none
    assert "budget" in STACK.SCHEDULES_NOT_EXPRESSIBLE


def test_the_readme_names_what_a_stack_writes_and_paddle_writes_it():
    kit.assert_names_offered(STACK, kit.measurements_section("paddle"))
