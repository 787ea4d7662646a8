"""The MindSpore bench (its block and instrument through the generic driver, PyNative) at
small sizes: residuals against hand-derived counts, gradients against numpy
(`tests.support.stack_kit.BenchKit`), no memory figure claimed.

A "unit" is one `(B, F)` float32 array; the analytic minimum is L units (the block inputs).
"""

from __future__ import annotations

from typing import ClassVar

from implementations.measuring.driver import bench_module
from tests.support.bench_reference import small_data
from tests.support.stack_kit import BenchKit

mindspore_stack = bench_module("implementations.stacks.mindspore.block")


class TestMindSporeBench(BenchKit):
    stack = mindspore_stack
    # Per block with no checkpoint: MatMul 1's gradient reads x_l (dW1), ReluGrad reads relu's
    # output a_l, which MatMul 2 reads too (one storage): 2 units. Cell.recompute keeps the
    # block cell's input x_l alone: 1 unit.
    UNITS: ClassVar[dict] = {"none": lambda L: 2 * L, "full": lambda L: L}

    @staticmethod
    def grads(case):
        return [g.asnumpy() for g in case.call()[1]]

    @staticmethod
    def save_mm():
        return mindspore_stack.build("", "save-mm", small_data(1))


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


def test_the_bench_runs_in_pynative_mode():
    assert mindspore_stack.versions()["mode"] == "PyNative"


def test_plan_measure_places_the_optimum_its_evaluations_measured_its_peak_not_observable():
    """MindSpore nests `Cell.recompute` regions as the optimum's placement nests them: `plan
    --measure` runs it (evaluations counted) and says why its peak is not observable."""
    from implementations.optimum import optimal_evaluations
    from implementations.stacks.mindspore import instrument
    from tests.support import plan_kit

    line, runs, predicted = plan_kit.measured_line("mindspore", 16, 6)
    assert line.startswith("mindspore · optimal(6): "), line
    assert f"peak: {instrument.PEAK}" in line
    # reentrant: each region's bprop reruns all of its blocks, so the count is the model's
    assert runs == predicted == optimal_evaluations(16, 6)
