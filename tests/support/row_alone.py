"""One extra row of `compare` (`conformance.comparison.rows`) measured alone, as `measure.run`
measures it among the others: its lane (a process of its own), its warm times, and with
`first_calls` its first call in a fresh process. Only the tests measure a row alone."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from conformance.checking import precision
from conformance.comparison import lanes
from conformance.comparison.first_call import first_call
from conformance.comparison.measure import row_lanes
from conformance.comparison.model import Expected, PortComparison
from conformance.comparison.warm import NOT_TIMED, set_warm
from implementations.contract import Params


def compare_row(
    name: str,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    repeats: int,
    exact: precision.Reference,
    expected: Expected,
    first_calls: bool = False,
) -> PortComparison:
    """The row `name` measured alone, with the arguments `measure.run` hands its lanes."""
    args = (params, x, cotangent, seed, repeats, exact, expected)
    (lane,) = row_lanes([name], args)
    if isinstance(lane, PortComparison):
        return lane
    try:
        lanes.run_lanes([lane], 1, lambda: None)
        timings = lane.time()
    finally:
        lanes.end_all([lane])
    row = lane.rows.get(name) or PortComparison(name, "available", error=lane.failure)
    set_warm(row, *timings.get(name, NOT_TIMED), lane=lane.key)
    if first_calls and row.state == "available" and not row.error:
        with tempfile.TemporaryDirectory() as scratch:
            inputs = Path(scratch) / "inputs.npz"
            np.savez(inputs, **params.as_dict(), x=x, cotangent=cotangent)
            row.first_call = first_call(name, inputs, seed)
    return row
