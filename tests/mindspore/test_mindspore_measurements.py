"""One meaning per figure, on MindSpore (PyNative): at L = 4, B = 8, F = 4, what the instrument
counts around the very call (block + instrument through the generic driver) equals the analytic
count of each placement, written here in units (one unit: one (B, F) float32 array), never read
off a simulator of the same conventions.

The analytic counts, from the exercise's block `relu(x @ W1 + b1) @ W2 + b2`: a plain block
keeps its input x_i (dW1) and relu's output a_i (dW2 and relu's gradient), 2 units; a region
keeps its input only, 1, and its backward reruns each of its blocks once. none: 2L = 8;
every: L = 4; segments(2): one region of 2 blocks (1) and a plain tail of 2 blocks (4): 5.

MindSpore's own, by hand from `Cell.recompute()` (reentrant: `_RecomputeCell` runs its cell
under `_no_grad` and its bprop reruns all of it, mindspore/common/recompute.py): each evaluation
runs both matmuls, none skipped (no early stop); the backward pass's `ops.matmul` calls are the
reruns' only (the gradient's kernels are C++); no departure is declared: the counts are the
model's.
"""

from __future__ import annotations

import pytest

from implementations.measuring.driver import bench_module
from implementations.measuring.placement import Placement
from implementations.measuring.record import MATMULS, NotObservable
from tests.support import measuring_kit as kit

L, B, F = 4, 8, 4
STACK = bench_module("implementations.stacks.mindspore.block")
#: placement -> (blocks rerun in the backward pass, batch-growing units saved)
ANALYTIC = {"none": (0, 2 * L), "every": (L, L), "segments(2)": (2, 1 + 2 * 2)}


def placed(stack, schedule: str, batch: int = B):
    return kit.placed(stack, schedule, L, batch, F)


def _watched(schedule: str):
    case = placed(STACK, schedule)
    with STACK.instrument.watch(case.x, case.params) as seen:
        case.call()
    return seen, seen.record()


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_counts_are_the_analytic_ones(schedule):
    reruns, _ = ANALYTIC[schedule]
    seen, record = _watched(schedule)
    forward, backward = record.evaluated("forward"), record.evaluated("backward")
    assert [e.block for e in forward] == list(range(L))
    assert len(backward) == reruns
    assert all(e.ran == MATMULS and e.skipped == () for e in forward + backward)
    assert (record.block_matmuls("forward"), record.block_matmuls("backward")) == (
        2 * L,
        2 * reruns,
    )
    assert (record.forward_matmuls, seen.matmuls["backward"]) == (2 * L, 2 * reruns)
    assert record.regions == sum(1 for _ in Placement.of(schedule, L).regions())
    assert record.recomputed == ({"Affine": 2 * reruns, "ReLU": reruns} if reruns else {})


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_saved_bytes_that_grow_with_the_batch_are_the_analytic_units(schedule):
    at_b, at_2b = placed(STACK, schedule), placed(STACK, schedule, 2 * B)
    kit.assert_saved_units(at_b, at_2b, ANALYTIC[schedule][1], "device")  # the CPU's memory


def test_a_figure_not_seen_says_why():
    from implementations.stacks.mindspore import ms

    record = placed(STACK, "every").record()
    for figure in ("backward_matmuls", "reruns", "peak_bytes", "peak_batch_bytes"):
        assert str(getattr(record, figure)).startswith("not observable: "), figure
    assert "max_memory_allocated() and memory_stats() read 0" in str(record.peak_bytes)
    assert ms.runtime.max_memory_allocated() == 0  # the reason holds, after a call
    static = placed(STACK, "every").peak()
    assert isinstance(static.saved, NotObservable)  # the peak's context watches nothing else


def test_a_policy_is_refused_naming_why_and_no_departure_is_declared():
    with pytest.raises(ValueError, match=r"save_dots.*Cell\.recompute takes no policy"):
        STACK.block.place(Placement.of("every", L, policy="save_dots"))
    assert STACK.block.POLICIES == {}
    assert STACK.SCHEDULE_DEPARTURES == {}  # the counts above are the model's


def test_the_readme_says_how_its_measurements_are_made():
    kit.assert_names_offered(STACK, kit.measurements_section("mindspore"))
