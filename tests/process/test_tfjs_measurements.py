"""One meaning per figure, on tfjs (pure-JS CPU backend, in Node): at L = 4, B = 8, F = 4, what
the instrument counts around the very call (block + instrument through the generic driver)
equals the analytic count of each placement, written here in units (one unit: one (B, F)
float32 array), never read off a simulator of the same conventions.

The analytic counts, from the exercise's block `relu(x @ W1 + b1) @ W2 + b2`: a plain block
keeps its input x_i (dW1) and relu's output a_i (dW2 and relu's gradient), 2 units; a region
keeps its input only, 1, and its backward reruns each of its blocks once. none: 2L = 8;
every: L = 4; segments(2): one region of 2 blocks (1) and a plain tail of 2 blocks (4): 5.

tfjs's departures, each a count model in `block.py` held here to its prediction:
- saved: its gradients keep 3 more units per plain block (`KEPT_BY_PLAIN_BLOCK`: Add's
  gradient keeps both inputs, x @ W1 and a @ W2, Relu's its input h);
- a region's rerun stops before its last block's a @ W2 (as the port's mlp.js region does):
  one matmul skipped per region, counted as skipped.
"""

from __future__ import annotations

import pytest

from implementations.measuring.driver import bench_module
from implementations.measuring.placement import Placement
from implementations.measuring.record import MATMULS, NotObservable
from tests.support import measuring_kit as kit

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="needs Node.js and npm: tfjs's block and instrument"),
]

L, B, F = 4, 8, 4
#: placement -> (blocks rerun in the backward pass, regions, batch-growing units saved, plain
#: blocks outside any region)
ANALYTIC = {"none": (0, 0, 2 * L, L), "every": (L, L, L, 0), "segments(2)": (2, 1, 1 + 2 * 2, 2)}


@pytest.fixture(scope="module")
def stack(node):
    return bench_module("implementations.stacks.tfjs.block")


def placed(stack, schedule: str, batch: int = B):
    return kit.placed(stack, schedule, L, batch, F)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_counts_are_the_analytic_ones_less_one_matmul_per_region(stack, schedule):
    reruns, regions, _, _ = ANALYTIC[schedule]
    record = placed(stack, schedule).counts()
    forward, backward = record.evaluated("forward"), record.evaluated("backward")
    assert [e.block for e in forward] == list(range(L))
    assert all(e.ran == MATMULS for e in forward)
    assert len(backward) == reruns
    skipped = [e for e in backward if e.skipped]
    assert len(skipped) == regions  # the early stop: each region's last block, once
    assert all(e.skipped == ("a@W2",) for e in skipped)
    assert record.block_matmuls("forward") == 2 * L
    assert record.block_matmuls("backward") == 2 * reruns - regions
    assert record.regions == record.reruns == regions
    assert regions == sum(1 for _ in Placement.of(schedule, L).regions())


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_every_matmul_kernel_is_the_blocks_and_their_gradients(stack, schedule):
    """tf.profile's BatchMatMul kernels: the forward's are the blocks' 2L; the backward's are
    the reruns' and the gradients': dW1, dW2 and da per block, and dx in every block but a
    plain first one (x wants no gradient; a region's hand-written pullback computes it)."""
    reruns, regions, _, _ = ANALYTIC[schedule]
    record = placed(stack, schedule).counts()
    first_plain = schedule == "none"  # every and segments(2) put block 0 in a region
    gradients = 4 * L - first_plain
    assert record.forward_matmuls == 2 * L
    assert record.backward_matmuls == (2 * reruns - regions) + gradients


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_saved_bytes_that_grow_with_the_batch_are_the_analytic_units(stack, schedule):
    _, _, units, plain = ANALYTIC[schedule]
    extra = stack.block.saved_departure(Placement.of(schedule, L))
    assert extra == 3 * plain  # the count model's prediction, by hand
    at_b, at_2b = placed(stack, schedule), placed(stack, schedule, 2 * B)
    kit.assert_saved_units(at_b, at_2b, units + extra, "device")  # the CPU backend's memory


def test_a_figure_not_seen_says_why(stack):
    record = placed(stack, "every").record()
    for figure in ("recomputed", "peak_bytes", "peak_batch_bytes", "peak_fixed_bytes"):
        assert str(getattr(record, figure)).startswith("not observable: "), figure
    assert "only when its tf.tidy ends" in str(record.peak_bytes)
    assert {t.role for t in record.saved} == {""}  # no roles: the tape names kernels
    assert isinstance(placed(stack, "every").peak().saved, NotObservable)


def test_save_mm_keeps_x_at_W1_and_reruns_no_matmul(stack):
    case = kit.placed(stack, "none", L, B, F)
    case.run = stack.block.place(Placement.of("every", L, policy="save-mm"))
    record = case.counts()
    assert record.block_matmuls("backward") == 0  # bias and relu rerun, both matmuls skipped
    assert len(record.evaluated("backward")) == L
    assert record.kept_bytes() == 2 * L * B * F * 4  # x_i (outside) and x_i @ W1 (the region's)


def test_a_policy_is_refused_naming_why(stack):
    with pytest.raises(ValueError, match=r"save_dots.*no remat policy API"):
        stack.block.place(Placement.of("every", L, policy="save_dots"))
    assert stack.SCHEDULE_DEPARTURES == {}  # the peak is not observable: nothing to explain


def test_the_readme_says_how_its_measurements_are_made(stack):
    section = kit.measurements_section("tfjs")
    kit.assert_names_offered(stack, section)
    assert "not observable" in section
