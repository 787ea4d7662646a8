"""The torch block's INTERNALS_UNITS (a, for `python -m conformance plan`) is what its
instrument measures: within half a quarter unit."""

from __future__ import annotations

from implementations.measuring.driver import bench_module
from tests.support import schedules_kit as kit

STACK = bench_module("implementations.stacks.torch.block")


def test_the_declared_internals_are_the_measured_ones():
    measured = kit.measured_internals(STACK)
    assert abs(measured - STACK.block.INTERNALS_UNITS) < 0.125, measured
