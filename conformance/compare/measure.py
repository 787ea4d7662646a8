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

import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import implementations
from implementations import found
from implementations.contract import BackwardRecord, Implementation, Params

from ..checking import precision
from ..checking.checks import measure
from ..checking.tolerance import INIT_ULPS, forward_bound, vjp_comparison
from ..reporting.jsonable import to_data
from ..running.timing import time_interleaved
from . import lanes, policy_matrix
from . import rows as extra_rows
from .first_call import first_call
from .load import BUSY_CORES, OthersWhileTiming, load_average


@dataclass
class Diff:
    """The largest difference from the canonical, and the bound at that element.

    **Arguments:**

    - `max_abs`: `max |port - canonical|` (after any relu-kink shift).
    - `bound`: the tolerance model's bound at the element of `max_abs`.
    - `worst_ratio`: `max |difference| / bound` over all elements; above 1 fails.
    """

    max_abs: float
    bound: float
    worst_ratio: float


@dataclass
class Bits:
    """One result's effective precision against the exact result (`conformance.checking.precision`).

    **Arguments:**

    - `bits`: effective bits (inf: exact; float32 arithmetic reads 19 to 24).
    - `ratio`: the precision tier's median error over its threshold; above 1 fails.
    """

    bits: float
    ratio: float


@dataclass
class Residuals:
    """What the backward pass keeps, from the port's instrument, checkpoint off or on.

    `count` and `bytes` leave parameters out, as `BackwardRecord.saved_bytes`
    does: they live whether or not anything is saved. `saved` lists them all.
    """

    count: int
    bytes: int
    saved: list[dict[str, Any]]
    recomputed: dict[str, int]
    checkpoint_regions: int | None
    instrument: str


@dataclass
class PortComparison:
    """One port's row."""

    name: str
    state: str  # "available", "unavailable" or "broken"
    reason: str = ""
    framework: str = ""
    reference: bool = False  # the canonical port, compared with itself
    versions: dict[str, str] = field(default_factory=dict)
    output: Diff | None = None  # forward with shared parameters
    exercise: Diff | None = None  # nn_checkpoint_forward, the port's own init
    gradients: dict[str, Diff] = field(default_factory=dict)
    # "output", "exercise", "w1", "b1", "w2", "b2", "x": against the exact result.
    precision: dict[str, Bits] = field(default_factory=dict)
    # The framework's float32 matmul setting: "default", "pinned", maybe "device", ...
    matmul_precision: dict[str, str] = field(default_factory=dict)
    residuals: dict[str, Residuals] = field(default_factory=dict)  # "off", "on"
    policies: list[Any] = field(default_factory=list)  # policy_matrix.PolicyCell, per policy
    warm_forward_seconds: float | None = None  # the median
    warm_vjp_seconds: float | None = None
    # Half the interquartile range of the samples, by "forward" and "vjp", and their count.
    warm_spread: dict[str, float] = field(default_factory=dict)
    warm_samples: int = 0
    first_call: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    # The process (`lanes`) that measured it, named for its framework: its warm times are
    # interleaved with those of the other ports of its lane only.
    lane: str = ""

    @property
    def worst_gradient(self) -> tuple[str, Diff] | None:
        if not self.gradients:
            return None
        return max(self.gradients.items(), key=lambda item: item[1].worst_ratio)

    @property
    def gradient_bits(self) -> tuple[str, Bits] | None:
        """The gradient with the fewest effective bits."""
        grads = [(k, v) for k, v in self.precision.items() if k not in ("output", "exercise")]
        return min(grads, key=lambda item: item[1].bits) if grads else None


@dataclass
class Comparison:
    """The whole comparison, for the tables and for `--json`."""

    seed: int
    dim: int
    features: int
    canonical: str
    ports: list[PortComparison]
    seconds: float = 0.0
    # The 1-minute load average "before" and "after" the run (the comparison's own processes
    # count in "after"), "others_while_timing": the cores other processes kept busy while the
    # ports were timed (Linux; `load`), and the cores the machine has.
    load: dict[str, float] = field(default_factory=dict)
    cores: int = 0
    first_calls: bool = False  # whether first calls were timed
    command: str = ""  # the command line as run, for the title (empty: from Python)

    @property
    def loaded(self) -> bool:
        """Whether other work shared the machine, so that the times are noisy: other processes
        kept `load.BUSY_CORES` busy while the ports were timed; where that is not measured,
        the load average exceeded the cores before or after the run (a 1-minute average lags:
        it still counts work that ended before the timings began)."""
        if "others_while_timing" in self.load:
            return self.load["others_while_timing"] >= BUSY_CORES
        return any(self.load.get(when, 0.0) > self.cores for when in ("before", "after"))

    def to_json(self) -> dict[str, Any]:
        return {**to_data(self), "notes": NOTES}


NOTES = {
    "output": "forward(params, x, checkpoint=True) with the canonical params, against the "
    "canonical port; bound from conformance.checking.tolerance.forward_bound",
    "exercise": "nn_checkpoint_forward(seed, x, features): each port's own init; the bound "
    f"allows {INIT_ULPS} ulps of parameter difference, as the suite does",
    "gradients": "vjp(params, x, cotangent, checkpoint=True), every parameter and x; bound and "
    "relu-kink shift from conformance.checking.tolerance.vjp_comparison",
    "precision": "effective bits of each result against the exact (float64) one on the same "
    "parameters, from the median over its elements of the error in units of float32's "
    "rounding (conformance.checking.precision; docs/PRECISION.md): float32 arithmetic reads 19 to "
    "24, TF32 and float16 about 11, bfloat16 8; inf: exact; ratio: the precision tier's "
    "median over its threshold (above 1 fails)",
    "matmul_precision": "the port's matmul_precision(): the framework's float32 matmul "
    "setting as the framework reports it, its default (without the suite's pin) and the pin; "
    "on a CPU they compute the same float32",
    "policies": "every remat policy (implementations.policies): expressible or not, the "
    "saved roles and bytes and backward matmuls from the port's instrument, agreement with "
    "the canonical under the same policy, and documented degradations (compare.policy_matrix)",
    "residuals": "backward_record(params, x, checkpoint=off/on): count and bytes leave "
    "parameters out; the list holds everything the instrument saw",
    "warm": "median seconds per call over samples interleaved with the other ports of the "
    "same framework's process (lane: its name), one process timed at a time, after a warm-up "
    "call "
    "(warm_spread: half the interquartile range of the samples; warm_samples: their count); the "
    "forward is nn_checkpoint_forward on the framework's own x, synchronised by reading "
    "the result back to numpy; the VJP is the contract's vjp (numpy in and out, so it "
    "includes moving the parameters into the framework)",
    "load": "the 1-minute load average before and after the run (after counts the "
    "comparison's own processes); others_while_timing: the cores that other processes kept "
    "busy while the ports were timed (Linux: all CPU time from /proc/stat minus the "
    "comparison's own). A load above the cores before, or other processes busy on a whole "
    "core while timing, mark the times noisy",
    "first_call": "only when asked for (first_calls): a fresh Python process per port, "
    "JAX's persistent compilation cache off: "
    "import = loading the port (its framework); forward = the first nn_checkpoint_forward "
    "(init and apply: tracing, compiling, running); vjp = the first contract vjp after it",
}


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


def diff(
    actual: np.ndarray, expected: np.ndarray, bound: np.ndarray, shift: np.ndarray | None = None
) -> Diff:
    """The largest difference and the bound there; a wrong shape or a non-finite value is
    infinitely bad. The suite's `checks.within` measures the same way, and raises."""
    found = measure(actual, expected, bound, shift)
    if not found.shape_ok:
        return Diff(float("inf"), float("nan"), float("inf"))
    return Diff(found.largest_error, found.bound_at_largest, found.worst_ratio)


def residuals(record: BackwardRecord) -> Residuals:
    """A `BackwardRecord` as plain data."""
    return Residuals(
        count=len(record.kept),
        bytes=record.saved_bytes,
        saved=[
            {
                "shape": list(t.shape),
                "dtype": t.dtype,
                "origin": t.origin,
                "bytes": t.nbytes,
                "note": t.note,
            }
            for t in record.saved
        ],
        recomputed=dict(record.recomputed),
        checkpoint_regions=record.checkpoint_regions,
        instrument=record.instrument,
    )


def make_inputs(seed: int, dim: int, features: int) -> tuple[np.ndarray, np.ndarray]:
    """x `(D,)` and a cotangent `(F,)`, standard normal float32, from `seed`."""
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal(dim).astype(np.float32),
        rng.standard_normal(features).astype(np.float32),
    )


@dataclass
class Expected:
    """The canonical port's results on the comparison's inputs, made once for every port
    (and handed to a port compared in a process of its own, which then need not load the
    canonical port's framework)."""

    forward: np.ndarray
    exercise: np.ndarray
    grads: dict[str, np.ndarray]
    # Output and gradients under each policy the canonical declares (`policy_matrix.references`).
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)


def expected_results(
    canonical: Implementation, params: Params, x: np.ndarray, cotangent: np.ndarray, seed: int
) -> Expected:
    """The canonical port's forward, exercise and VJP (`params`: its init for `seed`)."""
    exercise = canonical.nn_checkpoint_forward(seed, canonical.from_numpy(x), params.features)
    return Expected(
        forward=canonical.forward(params, x, checkpoint=True),
        exercise=canonical.to_numpy(exercise),
        grads=canonical.vjp(params, x, cotangent, checkpoint=True).as_dict(),
        policies=policy_matrix.references(canonical, params, x, cotangent),
    )


def compare_port(
    port: Implementation,
    canonical: Implementation | Expected,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    exact: precision.Reference | None = None,
) -> PortComparison:
    """Accuracy and residuals of one port (timings are added by the caller).

    `canonical`: the canonical port, or its results (`expected_results`).
    `exact`: `exact_results(params, x, cotangent)`, made once for every port
    (about 0.1 s at D = F = 1024); made here if not given.
    """
    row = PortComparison(port.name, "available", framework=port.framework, versions=port.versions())
    try:
        if not isinstance(canonical, Expected):
            canonical = expected_results(canonical, params, x, cotangent, seed)
        row.matmul_precision = dict(port.matmul_precision())
        out = port.forward(params, x, checkpoint=True)
        row.output = diff(out, canonical.forward, forward_bound(params, x))
        # `params` is the canonical init for this seed: the exercise's own parameters.
        features = params.features
        exercise = port.to_numpy(port.nn_checkpoint_forward(seed, port.from_numpy(x), features))
        row.exercise = diff(
            exercise, canonical.exercise, forward_bound(params, x, param_ulps=INIT_ULPS)
        )
        grads = port.vjp(params, x, cotangent, checkpoint=True).as_dict()
        reference = canonical.grads
        for name, (shift, bound) in vjp_comparison(params, x, cotangent, grads, reference).items():
            row.gradients[name] = diff(grads[name], reference[name], bound, shift)
        if exact is None:
            exact = exact_results(params, x, cotangent)
        row.precision = precision_bits(exact, params, x, cotangent, out, exercise, grads)
        for label, on in (("off", False), ("on", True)):
            row.residuals[label] = residuals(port.backward_record(params, x, checkpoint=on))
        if getattr(port, "policy_cells", True):  # an extra row (`rows`) has none
            row.policies = policy_matrix.measure(port, canonical.policies, params, x, cotangent)
    except Exception as error:  # a broken port gets a row that says so, not a crash
        row.error = f"{type(error).__name__}: {error}"
    return row


def exact_results(params: Params, x: np.ndarray, cotangent: np.ndarray) -> precision.Reference:
    """The exact results every port's bits are read against; `params` are the exercise's too
    (the canonical init for the seed)."""
    return precision.reference(params, x, cotangent, exercise_params=params)


def precision_bits(
    exact: precision.Reference,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    output: np.ndarray,
    exercise: np.ndarray,
    grads: dict[str, np.ndarray],
) -> dict[str, Bits]:
    """Each result's effective bits against the exact one (`exact_results`)."""
    results = {
        "output": precision.judge_output("output", output, exact.forward),
        "exercise": precision.judge_output("end_to_end", exercise, exact.end_to_end),
    }
    for result in precision.judge_grads(grads, exact, params, x, cotangent):
        results[result.name.removeprefix("d/d")] = result
    return {name: Bits(r.bits, r.ratio) for name, r in results.items()}


@dataclass
class Timing:
    """Samples of one call: their median, half their interquartile range, and their count."""

    median: float
    half_iqr: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Timing:
        if len(samples) < 2:
            return cls(statistics.median(samples), float("nan"), len(samples))
        q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
        return cls(statistics.median(samples), (q3 - q1) / 2, len(samples))


def warm_timings(
    ports: Sequence[Implementation],
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    repeats: int,
) -> list[tuple[Timing | None, Timing | None]]:
    """Warm seconds per call of each port's forward and VJP, all interleaved."""
    calls = []
    for port in ports:
        native = port.from_numpy(x)
        # A new seed on every call: a port must not get faster by caching one init.
        seeds = itertools.count(seed)
        calls.append(
            lambda port=port, native=native, seeds=seeds: port.to_numpy(
                port.nn_checkpoint_forward(next(seeds), native, params.features)
            )
        )
        calls.append(lambda port=port: port.vjp(params, x, cotangent, checkpoint=True))
    try:
        timings = [Timing.of(s) for s in time_interleaved(calls, repeats)]
    except Exception:
        return [(None, None)] * len(ports)
    return [(timings[2 * i], timings[2 * i + 1]) for i in range(len(ports))]


def set_warm(
    row: PortComparison, forward: Timing | None, vjp: Timing | None, *, lane: str = ""
) -> None:
    """Write a port's warm timings into its row, and the lane (process) that measured it."""
    row.lane = lane
    if forward is None or vjp is None:
        return
    row.warm_forward_seconds, row.warm_vjp_seconds = forward.median, vjp.median
    row.warm_spread = {"forward": forward.half_iqr, "vjp": vjp.half_iqr}
    row.warm_samples = min(forward.n, vjp.n)


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
                set_warm(row, *timings.get(name, (None, None)), lane=lane.key)
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
    """One extra row (`rows`) measured alone: its lane (a process of its own), its warm times,
    and with `first_calls` its first call in a fresh process."""
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
    set_warm(row, *timings.get(name, (None, None)), lane=lane.key)
    if first_calls and row.state == "available" and not row.error:
        with tempfile.TemporaryDirectory() as scratch:
            inputs = Path(scratch) / "inputs.npz"
            np.savez(inputs, **params.as_dict(), x=x, cotangent=cotangent)
            row.first_call = first_call(name, inputs, seed)
    return row


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


def measure_status(
    status: implementations.PortStatus,
    expected: Expected,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    exact: precision.Reference,
) -> tuple[PortComparison, Implementation | None]:
    """The row of a port as `implementations.status` found it, and the port if it loaded."""
    if status.state != "available":
        return PortComparison(status.name, status.state, reason=status.reason), None
    port = implementations.load(status.name)
    port.pin_matmul_precision()
    row = compare_port(port, expected, params, x, cotangent, seed, exact)
    row.reference = port.name == implementations.CANONICAL
    return row, port


def failed(comparison: Comparison) -> bool:
    """Whether a port is broken, errored, exceeds a bound, fails the precision tier, keeps no
    fewer bytes with the checkpoint on than off (any ✗ of the verdict), or has a policy cell
    that raised, disagrees with the canonical or saves what is not expected."""
    for row in comparison.ports:
        if row.state == "broken" or row.error:
            return True
        diffs = [row.output, row.exercise, *row.gradients.values()]
        if any(d is not None and d.worst_ratio > 1.0 for d in diffs):
            return True
        if any(b.ratio > 1.0 for b in row.precision.values()):
            return True
        off, on = row.residuals.get("off"), row.residuals.get("on")
        if off is not None and on is not None and on.bytes >= off.bytes:
            return True
        if any(policy_matrix.failed(cell) for cell in row.policies):
            return True
    return False
