"""The shared steps of each stack's "one meaning per figure" test
(`tests/<stack>/test_*_measurements.py`): a placement's case on the bench's data, the saved
bytes held to their units at B and 2B, and the README's Measurements section naming what a
block and an instrument offer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.benchmark.measure import Settings, make_data
from implementations.measuring import driver
from implementations.measuring.driver import PlacedCase
from implementations.measuring.placement import Placement
from implementations.measuring.record import MATMULS

ROOT = Path(__file__).parents[2]


def placed(stack: Any, schedule: str, depth: int, batch: int, features: int) -> PlacedCase:
    """`schedule`'s placement over `depth` blocks of `stack` (a `StackBench`) on the bench's
    data at that batch and width."""
    data = make_data(Settings(depths=(depth,), batch=batch, features=features), depth)
    return PlacedCase(stack, Placement.of(schedule, depth), data)


def assert_saved_units(at_b: PlacedCase, at_2b: PlacedCase, units: int, space: str) -> None:
    """What the call at B keeps grows by `units` (B, F) float32 arrays from B to 2B, keeps
    nothing that does not grow, and is all in memory space `space`."""
    unit = at_b.x.shape[0] * at_b.x.shape[1] * 4
    low, high = at_b.counts(), at_2b.counts()
    assert high.kept_bytes() - low.kept_bytes() == units * unit  # measured at B and 2B
    assert low.kept_bytes() == units * unit  # and nothing kept that does not grow
    assert {t.memory_space for t in low.saved} == {space}


def measurements_section(stack: str) -> str:
    """The `## Measurements` section of the stack's README."""
    text = (ROOT / "implementations/stacks" / stack / "README.md").read_text()
    section = text[text.index("## Measurements\n") :]
    return section[: section.index("\n## ", 1)]


def assert_names_offered(stack: Any, section: str) -> None:
    """Every name a block and an instrument module offer is in `section` and in the module."""
    for module, names in (
        (stack.block, driver.BLOCK_NAMES),
        (stack.instrument, driver.INSTRUMENT_NAMES),
    ):
        for name in names:
            assert f"`{name}" in section, name
            assert hasattr(module, name), name


def assert_forward_once(record: Any, depth: int) -> None:
    """The forward pass evaluates each of the `depth` blocks once, in order, both matmuls."""
    forward = record.evaluated("forward")
    assert [e.block for e in forward] == list(range(depth))
    assert all(e.ran == MATMULS for e in forward)


def assert_peak_split(record: Any, kept_bytes: int) -> None:
    """The peak's part that grows with the batch and its fixed part add up to it, the first at
    least the `kept_bytes` the call keeps for its backward pass, read at B and 2B."""
    assert record.peak_batch_bytes + record.peak_fixed_bytes == record.peak_bytes
    assert record.peak_batch_bytes >= kept_bytes
    assert "2B" in record.methods["peak_batch_bytes"]
