"""What every stack's "one meaning per figure" test shares (tests/<stack>/test_*_measurements.py,
issue 75): the placements at L = 4, B = 8, F = 4 with their analytic counts, written here by
hand in units (one unit: one (B, F) float32 array), never read off a simulator; the placed case;
the saved bytes measured at B and 2B; the README's "Measurements" section.

The analytic counts, from the exercise's block `relu(x @ W1 + b1) @ W2 + b2`: a plain block
keeps its input x_i (dW1) and relu's output a_i (dW2 and relu's gradient), 2 units; a region
keeps its input only, 1, and its backward reruns each of its blocks once. none: 2L = 8;
every: L = 4; segments(2): one region of 2 blocks (1) and a plain tail of 2 blocks (4): 5.
A stack that departs declares its count model (`DEPARTURES`), and its test holds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.benchmark.measure import Settings, make_data
from implementations.measuring import driver
from implementations.measuring.driver import PlacedCase
from implementations.measuring.placement import Placement
from implementations.measuring.record import Record

L, B, F = 4, 8, 4
UNIT = B * F * 4
#: placement -> (blocks rerun in the backward pass, batch-growing units saved)
ANALYTIC = {"none": (0, 2 * L), "every": (L, L), "segments(2)": (2, 1 + 2 * 2)}


def placed(stack: driver.StackBench, schedule: str, batch: int = B) -> PlacedCase:
    """`schedule` placed over L blocks on the bench's data at `batch`."""
    data = make_data(Settings(depths=(L,), batch=batch, features=F), L)
    return PlacedCase(stack, Placement.of(schedule, L), data)


def assert_kept_units(stack: driver.StackBench, schedule: str) -> Record:
    """The saved inputs and activations grow by the analytic units from B to 2B, and are
    those units at B (nothing kept that does not grow); the record at B."""
    _, units = ANALYTIC[schedule]
    at_b, at_2b = placed(stack, schedule).counts(), placed(stack, schedule, 2 * B).counts()
    assert at_2b.kept_bytes() - at_b.kept_bytes() == units * UNIT  # measured at B and 2B
    assert at_b.kept_bytes() == units * UNIT
    return at_b


def assert_readme_names_the_modules(stack: driver.StackBench, readme: Any) -> None:
    """The README's "Measurements" section names every name a block and an instrument offer
    (`driver.BLOCK_NAMES`, `INSTRUMENT_NAMES`), and the stack's modules have each."""
    text = Path(readme).read_text()
    section = text[text.index("## Measurements\n") : text.index("## Schedules\n")]
    for module, names in (
        (stack.block, driver.BLOCK_NAMES),
        (stack.instrument, driver.INSTRUMENT_NAMES),
    ):
        for name in names:
            assert f"`{name}" in section, name
            assert hasattr(module, name), name
