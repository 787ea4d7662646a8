"""The MindSpore bench stack (`implementations.stacks.mindspore.bench`, PyNative) at small sizes:
residuals against hand-derived counts, gradients against numpy, no memory figure claimed.

A "unit" is one `(B, F)` float32 array; the analytic minimum is L units (the block inputs).
"""

from __future__ import annotations

import numpy as np
import pytest

from conformance.benchmark import policies
from conformance.benchmark.measure import Settings
from implementations.stacks.mindspore import bench as mindspore_stack
from tests.bench_reference import UNIT, B, F, assert_grads_match, kept_activations, small_data

# Per block with no checkpoint: MatMul 1's gradient reads x_l (dW1), ReluGrad reads relu's
# output a_l, which MatMul 2 reads too (one storage): 2 units. Cell.recompute keeps the
# block cell's input x_l alone: 1 unit.
UNITS = {"none": lambda L: 2 * L, "full": lambda L: L}


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("mode", ["none", "full"])
def test_residuals_match_hand_derived_counts(mode, depth):
    kept_activations(mindspore_stack.build("", mode, small_data(depth)), UNITS[mode](depth))


def test_measure_claims_no_memory_figure_and_no_matmuls():
    # MindSpore's memory statistics cover device pools; on the CPU they stay 0, so the
    # bench says "not measured" rather than plot a 0.
    assert ms_max_memory_allocated() == 0
    static = mindspore_stack.build("", "full", small_data(2)).measure()
    assert (static.temp_bytes, static.peak_bytes, static.matmuls) == (None, None, None)


def ms_max_memory_allocated() -> int:
    from implementations.stacks.mindspore import ms

    mindspore_stack.build("", "none", small_data(2)).step()  # something allocated first
    return ms.runtime.max_memory_allocated()


@pytest.mark.parametrize("mode", ["none", "full"])
def test_gradients_match_numpy(mode):
    data = small_data(3)
    assert_grads_match([g.asnumpy() for g in mindspore_stack.build("", mode, data)._grads()], data)


def test_a_recomputed_step_equals_the_plain_one_bit_for_bit():
    data = small_data(2)
    plain, recomputed = (mindspore_stack.build("", mode, data)._grads() for mode in UNITS)
    for a, b in zip(plain, recomputed, strict=True):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_pynative_and_no_save_mm_and_the_policy_bench_runs_none_and_full():
    assert mindspore_stack.versions()["mode"] == "PyNative"
    assert mindspore_stack.configurations() == [("", "none"), ("", "full")]
    with pytest.raises(ValueError, match="save-mm"):
        mindspore_stack.Stack(small_data(1).blocks, "save-mm")
    assert mindspore_stack.POLICIES == ("none", "full")
    results, failed = policies.run(
        Settings(depths=(2,), batch=B, features=F, repeats=1, max_repeats=1),
        {"mindspore": mindspore_stack},
    )
    assert failed == {}
    assert [(r.policy, r.saved_bytes) for r in results] == [("none", 4 * UNIT), ("full", 2 * UNIT)]
