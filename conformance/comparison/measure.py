"""Measure every port side by side, on one seed and one shape (`python -m conformance compare`).

For each available port, against the canonical one on shared parameters:

- **accuracy:** the largest `|difference|` of the output and of every
  gradient, next to the tolerance model's bound at that element, and the
  worst difference/bound ratio (1.0 would fail the suite);
- **precision:** each port's effective precision in bits for the output,
  the exercise and every gradient, against the exact (float64) result
  (`conformance.checking.precision`; the canonical port is measured too), and the
  framework's float32 matmul setting: its default, as read from the
  framework, next to the one the suite pins;
- **residuals:** what the backward pass keeps with the checkpoint off and on,
  from the port's own instrument (`backward_record`);
- **time:** the warm per-call time of `nn_checkpoint_forward` and of a VJP,
  the median of interleaved samples with half their interquartile range and
  their count, interleaved within each framework's process and timed one
  process at a time (`lanes`), and the 1-minute load average before and
  after (times from a machine loaded past its cores are marked); optionally (`first_calls`,
  about a minute per port here) the first-call time (import, then the
  first forward and VJP: tracing and compiling), measured in a fresh
  process per port with JAX's persistent compilation cache turned off, since
  in-process or on-disk caches would hide it;
- **versions** of the frameworks.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

import implementations
from implementations import found
from implementations.contract import Implementation

from ..running import machine
from . import lanes
from . import rows as extra_rows
from .first_call import first_call
from .load import OthersWhileTiming, load_average

# The data model and a port's row, under this module's names too (`measure.PortComparison`).
from .model import (  # noqa: F401
    NOTES,
    Bits,
    Comparison,
    Diff,
    Expected,
    PortComparison,
    Residuals,
    Timing,
    diff,
    residuals,
)
from .port_row import (  # noqa: F401
    compare_port,
    exact_results,
    expected_results,
    make_inputs,
    measure_status,
    precision_bits,
)
from .warm import NOT_TIMED, set_warm, warm_timings


def run(
    seed: int,
    dim: int,
    features: int,
    names: Sequence[str] | None = None,
    *,
    repeats: int = 9,
    first_calls: bool = False,
    progress: Callable[[str], None] | None = None,
    concurrency: int | None = None,
) -> Comparison:
    """Compare the named ports (default: every registered one but the sharded ones) with the
    canonical port.

    Each framework's ports are measured in a process of their own (`lanes`), at most
    `concurrency` of them at a time (default: one per core), and timed one process at a time.
    """
    notify = progress or (lambda message: None)
    load_before = load_average()  # nothing of the comparison's runs yet
    started = time.perf_counter()
    canonical = implementations.load(implementations.CANONICAL)
    canonical.pin_matmul_precision()
    params = canonical.init_params(seed, dim, features)
    x, cotangent = make_inputs(seed, dim, features)
    exact = exact_results(params, x, cotangent)  # the same for every port
    expected = expected_results(canonical, params, x, cotangent, seed)

    # Unless named, the sharded ports sit out, as in the default run: their ranks cost start-ups.
    wanted = [
        n
        for n in implementations.registered()
        if (n in names if names else n not in implementations.SHARDED)
    ]
    if implementations.CANONICAL not in wanted:
        wanted.insert(0, implementations.CANONICAL)
    rows = not_installed(wanted)  # no process is started for those
    args = (params, x, cotangent, seed, repeats, exact, expected)
    here_key = lanes.lane_of(implementations.CANONICAL)
    away, here = [], []
    for key, lane_names in lanes.plan([n for n in wanted if n not in rows]).items():
        if key == here_key:
            here = lane_names
        else:
            away.append(lanes.Lane(key, lane_names, args))
    loaded: list[Implementation] = []
    extra = row_lanes(names, args)  # a framework's process-wide mode: a row and lane of its own
    for lane_or_row in extra:
        if isinstance(lane_or_row, PortComparison):
            rows[lane_or_row.name] = lane_or_row
        else:
            away.append(lane_or_row)
    order = [*wanted, *(row.name for row in extra_rows.wanted(names))]

    def measure_here() -> None:
        for status in implementations.status(here):
            if status.elsewhere:  # cannot load beside the others here: a lane of its own
                away.append(lanes.Lane(status.name, [status.name], args))
                continue
            notify(f"comparing {status.name}")
            row, port = measure_status(status, expected, params, x, cotangent, seed, exact)
            rows[row.name] = row
            if port is not None and not row.error:
                loaded.append(port)
        notify(f"waiting for {len(away)} other process(es): " + ", ".join(a.key for a in away))

    notify(f"comparing {len(wanted)} ports in {len(away) + 1} processes, one per framework")
    try:
        lanes.run_lanes(away, concurrency or lanes.default_concurrency(), measure_here)
        notify("timing warm calls, one process at a time")
        others = OthersWhileTiming(lambda: [lane.cpu_seconds() for lane in away])
        others.start()
        for port, timing in zip(
            loaded, warm_timings(loaded, params, x, cotangent, seed, repeats), strict=True
        ):
            set_warm(rows[port.name], *timing, lane=here_key)
        for lane in away:
            notify(f"timing {lane.key}")
            timings = lane.time()
            for name in lane.names:
                row = lane.rows.get(name)
                if row is None:
                    if name in lane.held:
                        continue  # its own lane has its row
                    row = PortComparison(name, "available", error=lane.failure or "no answer")
                rows[name] = row
                set_warm(row, *timings.get(name, NOT_TIMED), lane=lane.key)
        busy_elsewhere = others.stop()
        notify("ending the processes")
    finally:
        lanes.end_all(away)

    if first_calls:
        with tempfile.TemporaryDirectory() as scratch:
            inputs = Path(scratch) / "inputs.npz"
            np.savez(inputs, **params.as_dict(), x=x, cotangent=cotangent)
            # Every port that ran, the ones timed alone too: a fresh process
            # is where they load anyway. One at a time, as two compiling
            # processes would share the cores.
            for row in rows.values():
                if row.state != "available" or row.error:
                    continue
                notify(f"first call of {row.name}, fresh process")
                row.first_call = first_call(row.name, inputs, seed)
    return Comparison(
        seed,
        dim,
        features,
        implementations.CANONICAL,
        [rows[name] for name in order if name in rows],
        time.perf_counter() - started,
        load={
            "before": load_before,
            "after": load_average(),
            **({} if busy_elsewhere is None else {"others_while_timing": busy_elsewhere}),
        },
        cores=os.cpu_count() or 1,
        first_calls=first_calls,
        machine=machine.describe(),  # where it ran: the page's "machine" row reads it
    )


def row_lanes(names: Sequence[str] | None, args: tuple) -> list[lanes.Lane | PortComparison]:
    """A lane for each extra row the comparison includes (`rows`), or its row at once where
    its framework is not installed."""
    found: list[lanes.Lane | PortComparison] = []
    for row in extra_rows.wanted(names):
        why = extra_rows.missing(row.name)
        if why:
            found.append(PortComparison(row.name, "unavailable", reason=why))
        else:
            found.append(
                lanes.Lane(row.name, [row.name], args, target=f"{lanes.__name__}:serve_row")
            )
    return found


def not_installed(names: Sequence[str]) -> dict[str, PortComparison]:
    """Rows for the ports whose framework is not installed, read without importing anything."""
    registered = implementations.registered()
    rows = {}
    for name in names:
        target, _ = registered[name]
        seen = found.find(name, target)
        if seen.state == "unavailable":
            reason = seen.reason + implementations.install_hint(name)
            rows[name] = PortComparison(name, "unavailable", reason=reason)
        elif seen.state == "broken":
            rows[name] = PortComparison(name, "broken", reason=seen.reason)
    return rows


def failed(comparison: Comparison) -> bool:
    """Whether any ✗ (`Comparison.failed`)."""
    return comparison.failed
