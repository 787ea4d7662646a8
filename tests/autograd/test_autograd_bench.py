"""The autograd bench stack at small sizes: residuals and matmuls against hand-derived
counts, tracemalloc's peak, gradients against numpy.

A "unit" is one `(B, F)` float32 array; the analytic minimum is L units (the block inputs).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("autograd")

from conformance.benchmark import measure, policies
from conformance.benchmark.measure import Settings
from implementations.stacks.autograd import bench
from tests.bench_reference import UNIT, B, F, assert_grads_match, kept_activations, small_data

# Per block with no checkpoint: dot's VJPs keep the block's input x_l (dW1) and relu's
# output a_l (dW2), which relu's VJP reads too (one array): 2 units. The checkpoint keeps
# its five inputs: x_l and the parameters, 1 unit.
UNITS = {"none": lambda L: 2 * L, "full": lambda L: L}
# Per step: 2 forward dots a block; backward dW1, dW2, da and dx_l (block 0's x is fixed:
# no dx), so 6L - 1; the checkpoint reruns both dots of every block: 8L - 1.
MATMULS = {"none": lambda L: 6 * L - 1, "full": lambda L: 8 * L - 1}


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("mode", ["none", "full"])
def test_residuals_and_matmuls_match_hand_derived_counts(mode, depth):
    case = bench.build("", mode, small_data(depth))
    kept = kept_activations(case, UNITS[mode](depth))
    assert all(t.role for t in kept)  # named: x (block 0's input) and y, or a
    static = case.measure()
    assert static.matmuls == MATMULS[mode](depth)
    assert static.temp_bytes is None
    # At least the gradients the step returns: 2 weights and 2 biases per block.
    assert static.peak_bytes >= depth * (2 * F * F + 2 * F) * 4


def test_the_tracemalloc_peak_falls_with_the_checkpoint():
    # At B = 256, F = 32 the activations dominate. With no checkpoint 2L units live into
    # the backward pass, with it L, and one block reruns at a time (its d1, h, a, y and
    # their gradients): measured 13.7 units less at L = 16; at least L - 4 is asserted.
    depth, settings = 16, Settings(depths=(16,), batch=256, features=32)
    data, unit = measure.make_data(settings, depth), 256 * 32 * 4
    peaks = {m: bench.build("", m, data).peak_bytes() for m in UNITS}
    assert peaks["none"] - peaks["full"] >= (depth - 4) * unit, peaks


@pytest.mark.parametrize("mode", ["none", "full"])
def test_gradients_match_numpy(mode):
    data = small_data(3)
    case = bench.build("", mode, data)
    assert_grads_match(case._grads(), data)
    assert_grads_match(case._grads(), data)  # a second step: nothing accumulates


def test_a_checkpointed_step_equals_the_plain_one_bit_for_bit():
    data = small_data(2)
    plain, recomputed = (bench.build("", mode, data)._grads() for mode in UNITS)
    for a, b in zip(plain, recomputed, strict=True):
        np.testing.assert_array_equal(a, b)


def test_no_save_mm_and_the_policy_bench_runs_none_and_full():
    assert bench.configurations() == [("", "none"), ("", "full")]
    with pytest.raises(ValueError, match="save-mm"):
        bench.stack_fn("save-mm", 1)
    assert policies.policies_of(bench) == ("none", "full")
    results, failed = policies.run(
        Settings(depths=(2,), batch=B, features=F, repeats=1, max_repeats=1),
        {"autograd": bench},
    )
    assert failed == {}
    assert [(r.policy, r.saved_bytes) for r in results] == [("none", 4 * UNIT), ("full", 2 * UNIT)]
