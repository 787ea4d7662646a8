"""One meaning per figure, on DeepSpeed: at L = 4, B = 8, F = 4, what the instrument counts around
the very call (block + instrument through the generic driver) equals the analytic count of
each placement, written here in units (one unit: one (B, F) float32 array), never read off a
simulator of the same conventions.

The analytic counts, by hand from the exercise's block `relu(x @ W1 + b1) @ W2 + b2`:

- forward evaluations: the forward pass runs each of the L blocks once, both matmuls.
- backward reruns: DeepSpeed's checkpoint is reentrant: each region's backward reruns its body
  whole, both matmuls of every block (no early stop), and a region nested in another is run
  again by its outer's rerun and once more by its own backward (each level reruns its
  blocks). every: each block once; segments(2): blocks 0 and 1; none: nothing.
- regions and reruns: the placement's regions, each entered once in the forward pass and
  rerun once.
- batch-growing saved bytes: a plain block keeps its input x_i (addmm's for dW1) and relu's
  output a_i: 2 units; a region keeps its input only, on its node: 1. none: 2L = 8; every:
  L = 4; segments(2): one region of 2 blocks (1) and a plain tail of 2 blocks (4): 5.
- the backward's matmuls (the gradient of the parameters, x data): the reruns' plus, per
  block, dW1, dW2 and da, and dx for every block but the first.
- the peak's fixed part (of the parameters' gradient, the returned gradients left out, as
  `bench --schedules` reads it) is DeepSpeed's RNG states: `CheckpointFunction.forward` stashes
  two per region alive (`torch.get_rng_state()` and the accelerator's, the CPU's again here;
  an inner region's only once its outer reruns) and its backward two more per open level
  (the states it restores after the rerun), plus at most the parameters' bytes (an
  allocator's rounding, a gradient not yet returned): less than one state at F = 4.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from implementations.measuring.driver import PlacedCase, bench_module, split_peak  # noqa: E402
from implementations.measuring.placement import Placement  # noqa: E402
from implementations.measuring.record import MATMULS, NotObservable  # noqa: E402
from implementations.schedules import Region  # noqa: E402
from tests.support import measuring_kit as kit  # noqa: E402

L, B, F = 4, 8, 4
UNIT = B * F * 4
PARAMETER_BYTES = L * (2 * F * F + 2 * F) * 4  # w1, b1, w2, b2 per block, float32
STACK = bench_module("implementations.stacks.deepspeed.block")

#: placement -> (the backward's reruns as block indices, whole; batch-growing units saved)
ANALYTIC = {
    "none": ((), 2 * L),
    "every": (tuple(range(L)), L),
    "segments(2)": ((0, 1), 1 + 2 * 2),
}


def _case(schedule: str, batch: int = B) -> PlacedCase:
    return kit.placed(STACK, schedule, L, batch, F)


def _regions(schedule: str) -> int:
    return sum(1 for _ in Placement.of(schedule, L).regions())


def _levels(items) -> int:
    """The most regions open at once: the placement's nesting depth."""
    return max((1 + _levels(i.items) for i in items if isinstance(i, Region)), default=0)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_counts_are_the_analytic_ones(schedule):
    reruns, _ = ANALYTIC[schedule]
    record = _case(schedule).counts()
    kit.assert_forward_once(record, L)
    backward = record.evaluated("backward")
    assert sorted(e.block for e in backward) == sorted(reruns)
    assert all(e.ran == MATMULS for e in backward)  # reentrant: no early stop
    ran = len(MATMULS) * len(reruns)
    assert (record.block_matmuls("forward"), record.block_matmuls("backward")) == (2 * L, ran)
    gradient = 3 * L + (L - 1)  # dW1, dW2, da per block; dx but for block 0
    assert (record.forward_matmuls, record.backward_matmuls) == (2 * L, ran + gradient)
    assert (record.regions, record.reruns) == (_regions(schedule), _regions(schedule))


def test_a_nested_region_reruns_its_blocks_at_every_level():
    # binomial(1) at L = 4 is [[[0] 1] 2] 3: three levels. Each region holding a block reruns
    # it once: an outer's rerun runs its inner region's forward, the inner's backward again.
    placement = Placement.of("binomial(1)", L)
    assert _levels(placement.items) == 3
    record = _case("binomial(1)").counts()
    found = sorted(e.block for e in record.evaluated("backward"))
    assert found == sorted(b for _, region in placement.regions() for b in region.blocks)
    assert all(e.ran == MATMULS for e in record.evaluated("backward"))


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_saved_bytes_that_grow_with_the_batch_are_the_analytic_units(schedule):
    kit.assert_saved_units(_case(schedule), _case(schedule, 2 * B), ANALYTIC[schedule][1], "device")


@pytest.mark.parametrize("schedule", [*ANALYTIC, "binomial(1)"])
def test_the_peak_s_fixed_part_is_deepspeed_s_rng_states(schedule):
    # bench --schedules' peak: the parameters' gradient, the returned gradients left out
    record = split_peak(_case(schedule), _case(schedule, 2 * B), wrt=STACK.block.PEAK_WRT)
    states = 2 * (_regions(schedule) + _levels(Placement.of(schedule, L).items))
    left = record.peak_fixed_bytes - states * torch.get_rng_state().nbytes
    assert 0 <= left <= PARAMETER_BYTES < torch.get_rng_state().nbytes
    assert record.peak_batch_bytes % UNIT == 0
    kit.assert_peak_split(record, ANALYTIC.get(schedule, (0, 0))[1] * UNIT)


def test_a_figure_not_seen_says_why():
    record = _case("every").peak()
    assert isinstance(record.saved, NotObservable)
    assert str(record.saved).startswith("not observable: ")


def test_a_policy_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"placement: deepspeed\.checkpointing\.checkpoint"):
        STACK.block.place(Placement.of("every", L, "save_dots"))


def test_the_readme_says_how_deepspeed_measures():
    kit.assert_names_offered(STACK, kit.measurements_section("deepspeed"))


def test_the_reentrant_departure_is_a_count_model_held_to_the_peak():
    # CheckpointFunction.backward runs torch.autograd.backward over its rerun inside the outer
    # backward: each open region 1 unit beside the model, 2 where it is not its level's last
    # item (`reentrant_peak`). By hand, nested(2,2,2) at L = 8, [[0 1] [2 3]] [[4 5] [6 7]]:
    # [0 1]'s rerun beside its level's input: 1 + 4 + 2 - 1 = 6 (its input shared); [2 3]
    # (last) 2 + 4 + 1 - 1 = 6; so each outer region's inside peaks at 6; the first outer
    # (not last) 1 + 6 + 2 - 1 = 8, the second (last) 2 + 6 + 1 - 1 = 8. The peak: 8.
    peak = STACK.block.reentrant_peak
    assert peak(Placement.of("nested(2,2,2)", 8).items) == 8
    # binomial(2) at L = 4, [0] [[1] 2] 3: [0] 1 + 2 + 2 - 1 = 4; inside [[1] 2]: [1] 4,
    # then block 2 beside x1: 3; so 2 + 4 + 2 - 1 = 7; block 3 after: 4. The peak: 7.
    assert peak(Placement.of("binomial(2)", 4).items) == 7
    for model in STACK.SCHEDULE_DEPARTURES.values():
        assert model.predicts == {"peak_units": peak}
        assert "checkpointing.py:764" in model.reference
    # Measured (the parameters' gradient, split by batch): the count plus 2, as none's 2 units
    # above its model (the output and a gradient being made), at B = 64, F = 16.
    unit = 64 * 16 * 4
    for label, depth in (("nested(2,2,2)", 8), ("binomial(2)", 4)):
        low, high = (kit.placed(STACK, label, depth, rows, 16) for rows in (64, 128))
        grown = split_peak(low, high, wrt="params").peak_batch_bytes / unit
        assert grown == peak(Placement.of(label, depth).items) + 2, (label, grown)
