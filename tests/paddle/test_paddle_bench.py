"""The Paddle bench stack (`implementations.stacks.paddle.bench`) at small sizes: residuals against
hand-derived counts, Paddle's allocator peak, gradients against numpy.

A "unit" is one `(B, F)` float32 array; the analytic minimum is L units (the block inputs).
"""

from __future__ import annotations

import numpy as np
import pytest

from conformance.benchmark import measure, policies
from conformance.benchmark.measure import Settings
from implementations.stacks.paddle import bench as paddle_stack
from tests.bench_reference import UNIT, B, F, assert_grads_match, kept_activations, small_data

# Per block with no checkpoint: linear 1's gradient reads x_l (dW1), relu_grad reads its
# output a_l, which linear 2 reads too (one storage): 2 units. A reentrant recompute keeps
# its arguments (save_for_backward): x_l and the parameters: 1 unit.
UNITS = {"none": lambda L: 2 * L, "full": lambda L: L}


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("mode", ["none", "full"])
def test_residuals_match_hand_derived_counts(mode, depth):
    kept_activations(paddle_stack.build("", mode, small_data(depth)), UNITS[mode](depth))


def test_measure_reads_paddles_allocator_and_counts_no_matmuls():
    depth = 2
    for mode in UNITS:
        static = paddle_stack.build("", mode, small_data(depth)).measure()
        assert static.temp_bytes is None
        assert static.matmuls is None  # not measured: no hook over the backward kernels
        # At least the gradients the step returns: 2 weights and 2 biases per block.
        assert static.peak_bytes >= depth * (2 * F * F + 2 * F) * 4


def test_the_allocator_peak_falls_with_the_recompute():
    # At B = 256, F = 32 the activations dominate. With no checkpoint the forward pass keeps
    # 2 units a block (2L) alive into the backward pass; a recompute keeps 1 (L) and reruns
    # one block at a time, whose h, a and y make at most 3 more: L - 3 units less at least.
    depth, settings = 8, Settings(depths=(8,), batch=256, features=32)
    data, unit = measure.make_data(settings, depth), 256 * 32 * 4
    peaks = {m: paddle_stack.build("", m, data).peak_bytes() for m in UNITS}
    assert peaks["none"] - peaks["full"] >= (depth - 3) * unit, peaks


@pytest.mark.parametrize("mode", ["none", "full"])
def test_gradients_match_numpy(mode):
    data = small_data(3)
    case = paddle_stack.build("", mode, data)
    assert_grads_match([g.numpy() for g in case._grads()], data)
    case.peak_bytes()  # another step: it frees the last one's gradients first
    assert_grads_match([g.numpy() for g in case._grads()], data)  # not accumulated


def test_a_recomputed_step_equals_the_plain_one_bit_for_bit():
    data = small_data(2)
    plain, recomputed = (paddle_stack.build("", mode, data)._grads() for mode in UNITS)
    for a, b in zip(plain, recomputed, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_no_save_mm_and_the_policy_bench_runs_none_and_full():
    assert paddle_stack.configurations() == [("", "none"), ("", "full")]
    with pytest.raises(ValueError, match="save-mm"):
        paddle_stack.stack_fn("save-mm")
    assert paddle_stack.POLICIES == ("none", "full")
    results, failed = policies.run(
        Settings(depths=(2,), batch=B, features=F, repeats=1, max_repeats=1),
        {"paddle": paddle_stack},
    )
    assert failed == {}
    assert [(r.policy, r.saved_bytes) for r in results] == [("none", 4 * UNIT), ("full", 2 * UNIT)]
