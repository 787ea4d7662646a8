"""One meaning per figure, on MLX: at L = 4, B = 8, F = 4, what the instrument reads off the
very call (block + instrument through the generic driver) equals the analytic count of each
placement, written here in units (one unit: one (B, F) float32 array), never read off a
simulator of the same conventions.

The analytic counts, by hand from the block `relu(x @ W1 + b1) @ W2 + b2` and MLX's VJPs:

- forward evaluations: the forward pass runs each of the L blocks once, both matmuls. The
  backward pass reruns every block of every region once; MLX is lazy, so only what a gradient
  reads is run: a region's last block skips a @ W2 (its output feeds no gradient), the others
  run it (the next block's input).
- batch-growing saved bytes, the gradient of the parameters: a plain block keeps its input x_i
  (AddMM's VJP for dW1), h_i (Maximum's VJP compares its input with 0) and a_i (dW2): 3 units;
  a region keeps its input only: 1. none: 3L = 12; every: L = 4; segments(2): one region of 2
  blocks (1) and a plain tail of 2 blocks (6): 7.
- the matmuls of the whole step: the forward's 2L, the reruns', and per block dW1, dW2 and
  da, and dx for every block but the first: 4L - 1.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mlx")

from implementations.measuring.driver import PlacedCase, bench_module, split_peak
from implementations.measuring.placement import Placement
from implementations.measuring.record import MATMULS, NotObservable
from tests.support import measuring_kit as kit

L, B, F = 4, 8, 4
UNIT = B * F * 4
STACK = bench_module("implementations.stacks.mlx.block")

#: placement -> (region lengths, batch-growing units saved)
ANALYTIC = {"none": ((), 3 * L), "every": ((1,) * L, L), "segments(2)": ((2,), 1 + 3 * 2)}


def _case(schedule: str, batch: int = B) -> PlacedCase:
    return kit.placed(STACK, schedule, L, batch, F)


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_counts_are_the_analytic_ones(schedule):
    lengths, _ = ANALYTIC[schedule]
    record = _case(schedule).counts()
    forward, backward = record.evaluated("forward"), record.evaluated("backward")
    assert [(e.block, e.ran) for e in forward] == [(i, MATMULS) for i in range(L)]
    skipped = [e.skipped for e in backward]
    assert len(backward) == sum(lengths)
    assert skipped.count(("a@W2",)) == len(lengths)  # each region's last block
    assert skipped.count(()) == sum(lengths) - len(lengths)
    reruns = 2 * sum(lengths) - len(lengths)
    assert (record.block_matmuls("forward"), record.block_matmuls("backward")) == (2 * L, reruns)
    assert record.forward_matmuls == 2 * L
    assert record.backward_matmuls == reruns + 4 * L - 1
    assert (record.regions, record.reruns) == (len(lengths), len(lengths))


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_saved_bytes_that_grow_with_the_batch_are_the_analytic_units(schedule):
    # MLX's arrays are in its unified memory, the device's
    kit.assert_saved_units(_case(schedule), _case(schedule, 2 * B), ANALYTIC[schedule][1], "device")


@pytest.mark.parametrize("schedule", list(ANALYTIC))
def test_the_peak_is_the_backward_pass_and_says_it_cannot_be_split(schedule):
    # The backward pass starts with what the forward kept alive, x (there before the call)
    # left out and the output y (one unit) in: the peak is at least that, gradients beside.
    _, units = ANALYTIC[schedule]
    record = split_peak(_case(schedule), _case(schedule, 2 * B))
    assert record.peak_bytes >= units * UNIT
    assert "first mx.eval of an mx.vjp's gradient" in record.methods["peak_bytes"]
    for figure in (record.peak_batch_bytes, record.peak_fixed_bytes):
        assert isinstance(figure, NotObservable)
        assert str(figure).startswith("not observable: MLX evaluates on an asynchronous")


def test_a_figure_not_seen_says_why_and_a_policy_is_refused():
    record = _case("none").peak()
    assert str(record.saved).startswith("not observable: ")
    with pytest.raises(ValueError, match=r"save_dots.*mx\.checkpoint has no policy"):
        STACK.block.place(Placement.of("every", L, policy="save_dots"))
    assert STACK.block.POLICIES == {}  # declared: its checkpoint takes none
    with STACK.instrument.peak() as held:
        pass  # no call: no backward pass
    assert (
        str(held.record().peak_bytes)
        == "not observable: the call evaluated no gradient of an mx.vjp"
    )


def test_the_readme_says_how_each_figure_is_measured():
    section = kit.measurements_section("mlx")
    kit.assert_names_offered(STACK, section)
    assert STACK.instrument.PEAK_NOT_SPLIT[:40] in " ".join(section.split())


def test_a_graph_with_more_arrays_than_export_to_dot_can_name_reads_not_observable(monkeypatch):
    """At L = 64, nested and binomial placements name more than 1024 arrays, which
    mx.export_to_dot (names as keyword arguments) refuses: the figures say so, never a crash."""
    from implementations.stacks.mlx import instrument

    monkeypatch.setattr(instrument, "NAMED_LIMIT", 3)
    record = _case("every").counts()
    assert str(record.forward_matmuls).startswith(
        "not observable: mx.export_to_dot names at most 3"
    )
    assert str(record.saved).startswith("not observable: ")
