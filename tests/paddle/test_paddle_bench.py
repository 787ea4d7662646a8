"""The Paddle bench (its block and instrument through the generic driver) at small sizes:
residuals against hand-derived counts, gradients against numpy
(`tests.support.stack_kit.BenchKit`), Paddle's allocator peak.

A "unit" is one `(B, F)` float32 array; the analytic minimum is L units (the block inputs).
"""

from __future__ import annotations

from typing import ClassVar

from implementations.measuring.driver import bench_module
from tests.support.bench_reference import small_data
from tests.support.stack_kit import BenchKit, gradient_bytes, peaks_at

#: Paddle's bench: its block and instrument through the generic driver.
paddle_stack = bench_module("implementations.stacks.paddle.block")


class TestPaddleBench(BenchKit):
    stack = paddle_stack
    # Per block with no checkpoint: linear 1's gradient reads x_l (dW1), relu_grad reads its
    # output a_l, which linear 2 reads too (one storage): 2 units. A reentrant recompute keeps
    # its arguments (save_for_backward): x_l and the parameters: 1 unit.
    UNITS: ClassVar[dict] = {"none": lambda L: 2 * L, "full": lambda L: L}

    @staticmethod
    def grads(case):
        return list(case.call()[1])

    @staticmethod
    def between_steps(case):
        case.peak_bytes()  # another step: the call frees its gradients before it returns

    @staticmethod
    def check_kept(case, kept, mode, depth):
        assert all(t.role for t in kept)  # named: x (block 0's input) and y, or a

    @staticmethod
    def save_mm():
        return paddle_stack.build("", "save-mm", small_data(1))


def test_measure_reads_paddles_allocator_and_counts_no_matmuls():
    depth = 2
    for mode in TestPaddleBench.UNITS:
        static = paddle_stack.build("", mode, small_data(depth)).measure()
        assert static.temp_bytes is None
        assert static.matmuls is None  # not measured: no grad kernel in the statistics
        assert static.peak_bytes >= gradient_bytes(depth)  # at least the step's gradients


def test_the_allocator_peak_falls_with_the_recompute():
    # At B = 256, F = 32 the activations dominate. With no checkpoint the forward pass keeps
    # 2 units a block (2L) alive into the backward pass; a recompute keeps 1 (L) and reruns
    # one block at a time, whose h, a and y make at most 3 more: L - 3 units less at least.
    depth = 8
    peaks, unit = peaks_at(paddle_stack, depth)
    assert peaks["none"] - peaks["full"] >= (depth - 3) * unit, peaks
