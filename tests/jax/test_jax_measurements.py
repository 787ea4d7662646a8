"""One meaning per figure, on JAX: at L = 4, B = 8, F = 4, what the instrument reads off the very
call (block + instrument through the generic driver: `jax.vjp` of the placed run, jitted)
equals the analytic count of each placement, written here in units (one unit: one (B, F)
float32 array), never read off a simulator of the same conventions.

The analytic counts, by hand from the exercise's block `relu(x @ W1 + b1) @ W2 + b2` and the
block module's one program structure (two or more alike items: one `lax.scan`):

- forward block matmuls: the forward pass runs each of the L blocks once, both matmuls: 2L.
- backward block matmuls (the reruns): a region over one block reruns x @ W1 only: its a @ W2
  is skipped, since no gradient reads the block's output (relu's mask and a come from h);
  a region over a scan of k blocks reruns both matmuls of each (one loop body for all k).
  none: 0; every: L; segments(2): one region of 2 blocks, 4.
- every matmul of the step (the parameters' gradient): the block matmuls plus, per block,
  dW1, dW2, da and dx (a loop body computes block 0's dx too): 4L.
- batch-growing saved bytes: a plain block keeps its input x_i (dW1), relu's mask (a bool: a
  quarter unit) and a_i (dW2): 2.25 units; a region keeps its input only: 1.
  none: 2.25 L = 9; every: L = 4; segments(2): 1 + 2 x 2.25 = 5.5.
- regions and reruns: the placement's (none 0, every L, segments(2) 1), each once.
"""

from __future__ import annotations

import functools

import pytest

pytest.importorskip("jax")

from conformance.benchmark.measure import Settings, make_data
from implementations.measuring.departure import CountModel
from implementations.measuring.driver import PlacedCase, bench_module
from implementations.measuring.placement import Placement
from implementations.measuring.record import NotObservable
from implementations.schedules import Schedule
from tests.support import measuring_kit as kit

L, B, F = 4, 8, 4
UNIT = B * F * 4
STACK = bench_module("implementations.stacks.jax.block")

#: placement -> (block matmuls rerun in the backward pass, batch-growing units saved)
ANALYTIC = {"none": (0, 2.25 * L), "every": (L, L), "segments(2)": (2 * 2, 1 + 2 * 2.25)}


@functools.cache  # each record compiles the program: made once per test process
def _case(schedule: str, batch: int = B) -> PlacedCase:
    return kit.placed(STACK, schedule, L, batch, F)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_counts_are_the_analytic_ones(schedule):
    rerun, _ = ANALYTIC[schedule]
    record = _case(schedule).counts()
    assert (record.block_matmuls("forward"), record.block_matmuls("backward")) == (2 * L, rerun)
    assert record.forward_matmuls + record.backward_matmuls == 2 * L + rerun + 4 * L
    regions = sum(1 for _ in Placement.of(schedule, L).regions())
    assert (record.regions, record.reruns) == (regions, regions)
    # a compiled program has no block boundaries: evaluations are not observable, said why
    assert str(record.evaluations).startswith("not observable: ")


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_saved_bytes_that_grow_with_the_batch_are_the_analytic_units(schedule):
    _, units = ANALYTIC[schedule]
    kit.assert_saved_units(_case(schedule), _case(schedule, 2 * B), units, "device")  # XLA:CPU


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_peak_is_not_observable_and_its_batch_part_is_planned(schedule):
    _, units = ANALYTIC[schedule]
    record = _case(schedule).peak()
    assert isinstance(record.peak_bytes, NotObservable)
    assert "no allocation profiler" in str(record.peak_bytes)
    # the compiled program's temporaries at B and 2B: what grows holds at least the residuals
    assert record.peak_batch_bytes >= units * UNIT
    assert "temp(2B) - temp(B)" in record.methods["peak_batch_bytes"]
    assert isinstance(record.peak_fixed_bytes, int)


def test_a_removed_rerun_is_the_count_model_s_and_not_observable():
    # binomial(2) at L = 4, [0] [[1] 2] 3: two regions of one block with no loop of their own
    # (each alone at its level), each rerun x @ W1 merged by XLA:CPU; the record says so, with
    # the count the block's model gives, rather than count the program as the schedule
    assert STACK.block.removed_reruns(Placement.of("binomial(2)", L)) == 2
    case = _case("binomial(2)")
    record, peak = case.counts(), case.peak()
    for figure in (record.phase_block_matmuls, peak.peak_batch_bytes):
        assert str(figure).startswith("not observable: XLA:CPU removed the reruns")
        assert "2 of the" in str(figure)
        assert "cse_barrier_expander" in str(figure)


@pytest.mark.parametrize("depth", [4, 8])
def test_nested_binary_counts_at_small_l(depth):
    # nested(2,...,2), log2 L levels: each level's regions rerun, as scans, both matmuls of
    # every block they hold, but the innermost, regions of 2 plain blocks (a scan: both of
    # each): L per level of regions but for regions of one block; levels of regions: log2 L - 1
    levels = depth.bit_length() - 2
    case = kit.placed(
        STACK, "nested(" + ",".join(["2"] * (depth.bit_length() - 1)) + ")", depth, B, F
    )
    record = case.counts()
    assert record.phase_block_matmuls == {"forward": 2 * depth, "backward": 2 * depth * levels}


def test_the_nested_departure_is_a_count_model():
    # jax's scan transpose: each open level's loop holds its carry, the cotangent: one unit per
    # level beyond the model, held by the bench (tests/jax/test_jax_schedules.py, at the sweep)
    departure = STACK.SCHEDULE_DEPARTURES["nested"]
    assert isinstance(departure, CountModel)
    assert set(departure.predicts) == {"peak_units"}
    assert "loops.py" in departure.reference  # its upstream source, not "not declared"
    placement = Schedule.parse("nested(2,2)").placement(L)
    model = Schedule.parse("nested(2,2)").peak_activations(L).units
    assert departure.predict(placement)["peak_units"] == model + 1  # one level: one unit


def test_a_policy_the_block_cannot_run_is_refused_and_its_policies_run():
    with pytest.raises(ValueError, match=r"budget.*not expressible in JAX"):
        STACK.block.place(Placement.of("every", L, policy="budget"))
    data = make_data(Settings(depths=(L,), batch=B, features=F), L)
    saved = PlacedCase(STACK, Placement.of("every", L, "save_dots"), data).counts()
    assert saved.kept_bytes() == 2 * L * UNIT  # x and x @ W1 per block (dots_saveable)


def test_the_readme_names_what_a_stack_writes_and_jax_writes_it():
    kit.assert_names_offered(STACK, kit.measurements_section("jax"))
