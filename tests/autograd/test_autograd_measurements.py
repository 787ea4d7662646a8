"""One meaning per figure, on autograd: at L = 4, B = 8, F = 4, what the instrument counts
around the very call (block + instrument through the generic driver) equals the analytic count
of each placement, written here in units (one unit: one (B, F) float32 array), never read
off a simulator of the same conventions.

The analytic counts, by hand from the exercise's block `relu(x @ W1 + b1) @ W2 + b2`:

- forward evaluations: the forward pass runs each of the L blocks once; the backward pass
  reruns every block of every region once (a region reruns all its blocks, autograd being
  eager: nothing is pruned). Each evaluation runs both matmuls, none skipped.
- batch-growing saved bytes: a plain block keeps its input x_i (dot's VJP for dW1) and relu's
  output a_i (dot's VJP for dW2, relu's VJP): 2 units; a region keeps its input only: 1.
  none: 2L = 8; every: L = 4; segments(2): one region of 2 blocks (1) and a plain tail of 2
  blocks (4): 5.
- the matmuls of the whole step (the gradient of the parameters, x held fixed): the forward
  evaluations' plus, per block, dW1, dW2 and da, and dx for every block but the first.
"""

from __future__ import annotations

import pytest

pytest.importorskip("autograd")

from implementations.measuring.driver import PlacedCase, bench_module, split_peak
from implementations.measuring.placement import Placement
from implementations.measuring.record import MATMULS, NotObservable
from implementations.schedules import Schedule
from tests.support import measuring_kit as kit

L, B, F = 4, 8, 4
UNIT = B * F * 4
STACK = bench_module("implementations.stacks.autograd.block")

#: placement -> (blocks rerun in the backward pass, batch-growing units saved)
ANALYTIC = {"none": (0, 2 * L), "every": (L, L), "segments(2)": (2, 1 + 2 * 2)}


def _case(schedule: str, batch: int = B) -> PlacedCase:
    return kit.placed(STACK, schedule, L, batch, F)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_counts_are_the_analytic_ones(schedule):
    reruns, _ = ANALYTIC[schedule]
    record = _case(schedule).counts()
    forward, backward = record.evaluated("forward"), record.evaluated("backward")
    assert sorted(e.block for e in forward) == list(range(L))
    assert len(backward) == reruns
    assert all(e.ran == MATMULS and e.skipped == () for e in forward + backward)
    assert (record.block_matmuls("forward"), record.block_matmuls("backward")) == (
        2 * L,
        2 * reruns,
    )
    gradient = 3 * L + (L - 1)  # dW1, dW2, da per block; dx but for block 0
    assert record.forward_matmuls + record.backward_matmuls == 2 * (L + reruns) + gradient
    regions = sum(1 for _ in Placement.of(schedule, L).regions())
    assert (record.regions, record.reruns) == (regions, regions)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_saved_bytes_that_grow_with_the_batch_are_the_analytic_units(schedule):
    # numpy's one memory: the CPU's
    kit.assert_saved_units(_case(schedule), _case(schedule, 2 * B), ANALYTIC[schedule][1], "device")


def test_the_peak_splits_into_a_part_growing_with_the_batch_and_a_fixed_part():
    # The peak's own count is autograd's departure (its declared `Departure`, checked by the
    # schedule bench); here: the split is the record's own two figures, each with its method.
    record = split_peak(_case("every"), _case("every", 2 * B))
    kit.assert_peak_split(record, L * UNIT)  # at least what every keeps


def test_a_figure_not_seen_says_why_and_a_policy_is_refused():
    record = _case("none").peak()
    assert isinstance(record.saved, NotObservable)
    assert str(record.saved).startswith("not observable: ")
    with pytest.raises(ValueError, match=r"save_dots.*autograd\.checkpoint has no policy"):
        STACK.block.place(Placement.of("every", L, policy="save_dots"))
    assert STACK.block.POLICIES == {}  # declared: its checkpoint takes none


def test_the_departure_is_declared_for_every_schedule_with_regions():
    assert set(STACK.SCHEDULE_DEPARTURES) == {"every", "segments", "nested", "binomial"}
    assert Schedule("none").name not in STACK.SCHEDULE_DEPARTURES


def test_the_readme_names_what_a_stack_writes_and_autograd_writes_it():
    kit.assert_names_offered(STACK, kit.measurements_section("autograd"))
