"""The autograd bench stack at small sizes: residuals against hand-derived counts, gradients
against numpy (`tests.support.stack_kit.BenchKit`), matmuls against hand-derived counts,
tracemalloc's
peak.

A "unit" is one `(B, F)` float32 array; the analytic minimum is L units (the block inputs).
"""

from __future__ import annotations

from typing import ClassVar

import pytest

pytest.importorskip("autograd")

from implementations.measuring.driver import bench_module
from tests.support.bench_reference import small_data
from tests.support.stack_kit import MODES, BenchKit, gradient_bytes, peaks_at

# Per step: 2 forward dots a block; backward dW1, dW2, da and dx_l (block 0's x is fixed:
# no dx), so 6L - 1; the checkpoint reruns both dots of every block: 8L - 1.
MATMULS = {"none": lambda L: 6 * L - 1, "full": lambda L: 8 * L - 1}
#: autograd's bench: its block and instrument through the generic driver.
bench = bench_module("implementations.stacks.autograd.block")


class TestAutogradBench(BenchKit):
    stack = bench
    # Per block with no checkpoint: dot's VJPs keep the block's input x_l (dW1) and relu's
    # output a_l (dW2), which relu's VJP reads too (one array): 2 units. The checkpoint keeps
    # its five inputs: x_l and the parameters, 1 unit.
    UNITS: ClassVar[dict] = {"none": lambda L: 2 * L, "full": lambda L: L}

    @staticmethod
    def grads(case):
        return list(case.call()[1])

    @staticmethod
    def check_kept(case, kept, mode, depth):
        assert all(t.role for t in kept)  # named: x (block 0's input) and y, or a

    @staticmethod
    def save_mm():
        return bench.build("", "save-mm", small_data(1))


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("mode", list(MODES))
def test_measure_counts_matmuls_and_peak(mode, depth):
    static = bench.build("", mode, small_data(depth)).measure()
    assert static.matmuls == MATMULS[mode](depth)
    assert static.temp_bytes is None
    assert static.peak_bytes >= gradient_bytes(depth)  # at least the step's gradients


def test_the_tracemalloc_peak_falls_with_the_checkpoint():
    # At B = 256, F = 32 the activations dominate. With no checkpoint 2L units live into
    # the backward pass, with it L, and one block reruns at a time (its d1, h, a, y and
    # their gradients): measured 13.7 units less at L = 16; at least L - 4 is asserted.
    depth = 16
    peaks, unit = peaks_at(bench, depth)
    assert peaks["none"] - peaks["full"] >= (depth - 4) * unit, peaks
