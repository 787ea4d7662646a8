"""One meaning per figure, on TensorFlow: at L = 4, B = 8, F = 4, what the instrument counts
around the very call (block + instrument through the generic driver, the eager program)
equals the analytic count of each placement, written here in units (one unit: one (B, F)
float32 array), never read off a simulator of the same conventions.

The analytic counts, by hand from the exercise's block `relu(x @ W1 + b1) @ W2 + b2`:

- forward evaluations: the forward pass runs each of the L blocks once; the backward pass
  reruns every block of every region once (`tf.recompute_grad`'s gradient reruns `f` whole,
  eagerly: nothing is pruned). Each evaluation runs both matmuls, none skipped.
- batch-growing saved bytes: a plain block keeps its input x_i (MatMul's gradient, for dW1)
  and relu's output a_i (ReluGrad, and MatMul's gradient for dW2): 2 units; a region keeps
  its input only: 1. none: 2L = 8; every: L = 4; segments(2): one region of 2 blocks (1) and
  a plain tail of 2 blocks (4): 5.
- the matmuls of the whole step (the parameters' gradient, x held fixed): the evaluations'
  plus, per block, dW1, dW2 and da, and dx for every block but the first; a region's own
  tape differentiates its rerun with respect to every argument, its input included: block
  0's dx too where block 0 is in a region (every, segments(2)).
"""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from conformance.benchmark.measure import Settings, make_data
from implementations.measuring.driver import PlacedCase, batch_peak, bench_module
from implementations.measuring.placement import Placement
from implementations.measuring.record import MATMULS, NotObservable
from tests.support import measuring_kit as kit

L, B, F = 4, 8, 4
UNIT = B * F * 4
STACK = bench_module("implementations.stacks.tensorflow.block")

#: placement -> (blocks rerun in the backward pass, batch-growing units saved, block 0's dx)
ANALYTIC = {"none": (0, 2 * L, 0), "every": (L, L, 1), "segments(2)": (2, 1 + 2 * 2, 1)}


def _case(schedule: str, batch: int = B) -> PlacedCase:
    return kit.placed(STACK, schedule, L, batch, F)


def _program(variant: str) -> PlacedCase:
    """`every` at L blocks as the program of `variant` (`block.program`)."""
    data = make_data(Settings(depths=(L,), batch=B, features=F), L)
    return PlacedCase(STACK, Placement.of("every", L), data, variant)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_counts_are_the_analytic_ones(schedule):
    reruns, _, first_dx = ANALYTIC[schedule]
    record = _case(schedule).counts()
    forward, backward = record.evaluated("forward"), record.evaluated("backward")
    assert sorted(e.block for e in forward) == list(range(L))
    assert len(backward) == reruns
    assert all(e.ran == MATMULS and e.skipped == () for e in forward + backward)
    assert (record.block_matmuls("forward"), record.block_matmuls("backward")) == (
        2 * L,
        2 * reruns,
    )
    gradient = 3 * L + (L - 1) + first_dx  # dW1, dW2, da per block; dx but for block 0
    assert record.forward_matmuls + record.backward_matmuls == 2 * (L + reruns) + gradient
    regions = sum(1 for _ in Placement.of(schedule, L).regions())
    assert (record.regions, record.reruns) == (regions, regions)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_saved_bytes_that_grow_with_the_batch_are_the_analytic_units(schedule):
    _, units, _ = ANALYTIC[schedule]
    kit.assert_saved_units(_case(schedule), _case(schedule, 2 * B), units, "device")


def test_the_function_program_runs_the_eager_program_s_matmuls_and_xla_prunes_one_a_block():
    # The tf.function graph holds the eager step's ops (Grappler runs later); XLA drops the
    # rerun's second matmul, whose output no gradient reads, and keeps the first: 7L - 1.
    eager = _case("every").counts()
    function, xla = (
        STACK.instrument.program(case.program, (case.params, case.x, case.cotangent), variant)
        for variant, case in (("function", _program("function")), ("xla", _program("xla")))
    )
    assert (
        (function.forward_matmuls, function.backward_matmuls)
        == (
            eager.forward_matmuls,
            eager.backward_matmuls,
        )
        == (2 * L, 2 * L + 4 * L)
    )
    assert xla.all_matmuls() == 7 * L - 1
    assert str(xla.forward_matmuls).startswith("not observable: XLA compiles both passes")


def test_the_peak_reads_only_its_growth_with_the_batch_and_says_why_not_the_rest():
    # The allocator statistics see allocations of 256 KiB and more: the peak is read at kB
    # and 2kB rows; what does not grow with the batch is not observable.
    record = batch_peak(_case("every"))
    assert record.peak_batch_bytes >= L * UNIT  # at least what every keeps
    assert "(peak(2kB) - peak(kB)) / k" in record.methods["peak_batch_bytes"]
    unseen = "not observable: allocations under 256 KiB go unseen: its growth is read"
    assert str(record.peak_bytes) == str(record.peak_fixed_bytes) == unseen


def test_a_figure_not_seen_says_why_and_a_policy_is_refused():
    record = _case("none").peak()
    assert isinstance(record.saved, NotObservable)
    assert str(record.saved).startswith("not observable: ")
    with pytest.raises(ValueError, match=r"save_dots.*tf\.recompute_grad has no policy"):
        STACK.block.place(Placement.of("every", L, policy="save_dots"))
    assert set(STACK.POLICIES) == {"none", "full"}  # save-mm is written out, no policy


def test_the_departure_is_a_count_model_that_meets_counts_worked_by_hand():
    from implementations.schedules import Schedule

    assert set(STACK.SCHEDULE_DEPARTURES) == {"every", "segments", "nested", "binomial"}
    peak = STACK.block.recompute_grad_peak
    # every, L = 4: 4 inputs; the last region (its level's last: 2 held) reruns a3 beside x3
    assert peak(Schedule.parse("every").placement(4)) == 4 + 1 + 2
    # [[0 1] [2 3]] [[4 5] [6 7]]: in [6 7]'s rerun (last: 2 held) x6 x7 a6 a7 and x4, +1
    # held: 7; the outer (last: 2 held) shares x4: 7 + 1, beside x0: 10; the first outer
    # region (3 held) with x0 alone: 1 + 7 + 2 = 10
    assert peak(Schedule.parse("nested(2,2,2)").placement(8)) == 10
    # [[[0] 1] 2] 3: each region its level's first, 3 held: [0] 2 + 2 = 4; [[0] 1] 1 + 4 + 2
    # = 7; [[[0] 1] 2] 1 + 7 + 2 = 10; at the top beside x0: 11
    assert peak(Schedule.parse("binomial(1)").placement(4)) == 11
    for model in STACK.SCHEDULE_DEPARTURES.values():
        assert model.predicts == {"peak_units": peak}
        assert "custom_gradient.py:" in model.reference


def test_the_readme_names_what_the_stack_writes():
    section = kit.measurements_section("tensorflow")
    kit.assert_names_offered(STACK, section)
    optional = {
        STACK.block: ("VARIANTS", "program", "SAVE_MM_POLICY"),
        STACK.instrument: ("program", "SEES_FROM", "backward_record"),
    }
    for module, names in optional.items():
        for name in names:
            assert f"`{name}" in section, name
            assert hasattr(module, name), name
