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
  their count, and the 1-minute load average before and after (times from a
  machine loaded past its cores are marked); optionally (`first_calls`,
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
from implementations.contract import BackwardRecord, Implementation, Params

from ..checking import precision
from ..checking.checks import measure
from ..checking.tolerance import INIT_ULPS, forward_bound, vjp_comparison
from ..reporting.jsonable import to_data
from ..running import environment, isolation
from ..running.timing import time_interleaved
from . import policy_matrix
from .first_call import first_call


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
    timed_alone: bool = False  # its warm times come from a process of its own, not interleaved

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
    # The 1-minute load average "before" and "after" the run, and the cores it shares.
    load: dict[str, float] = field(default_factory=dict)
    cores: int = 0
    first_calls: bool = False  # whether first calls were timed
    command: str = ""  # the command line as run, for the title (empty: from Python)

    @property
    def loaded(self) -> bool:
        """Whether the load average exceeded the cores before or after: the times are noisy."""
        return any(value > self.cores for value in self.load.values())

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
    "warm": "median seconds per call over interleaved samples, after a warm-up call "
    "(warm_spread: half the interquartile range of the samples; warm_samples: their count); the "
    "forward is nn_checkpoint_forward on the framework's own x, synchronised by reading "
    "the result back to numpy; the VJP is the contract's vjp (numpy in and out, so it "
    "includes moving the parameters into the framework)",
    "load": "the 1-minute load average before and after the run; above cores, the machine "
    "was busy and the times are noisy",
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


def expected_results(
    canonical: Implementation, params: Params, x: np.ndarray, cotangent: np.ndarray, seed: int
) -> Expected:
    """The canonical port's forward, exercise and VJP (`params`: its init for `seed`)."""
    exercise = canonical.nn_checkpoint_forward(seed, canonical.from_numpy(x), params.features)
    return Expected(
        forward=canonical.forward(params, x, checkpoint=True),
        exercise=canonical.to_numpy(exercise),
        grads=canonical.vjp(params, x, cotangent, checkpoint=True).as_dict(),
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
        row.policies = policy_matrix.measure(port, canonical, params, x, cotangent)
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


def set_warm(row: PortComparison, forward: Timing | None, vjp: Timing | None) -> None:
    """Write a port's warm timings into its row."""
    if forward is None or vjp is None:
        return
    row.warm_forward_seconds, row.warm_vjp_seconds = forward.median, vjp.median
    row.warm_spread = {"forward": forward.half_iqr, "vjp": vjp.half_iqr}
    row.warm_samples = min(forward.n, vjp.n)


def load_average() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def run(
    seed: int,
    dim: int,
    features: int,
    names: Sequence[str] | None = None,
    *,
    repeats: int = 9,
    first_calls: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Comparison:
    """Compare the named ports (default: every registered one but the sharded ones) with the
    canonical port."""
    notify = progress or (lambda message: None)
    load_before = load_average()
    started = time.perf_counter()
    canonical = implementations.load(implementations.CANONICAL)
    canonical.pin_matmul_precision()
    params = canonical.init_params(seed, dim, features)
    x, cotangent = make_inputs(seed, dim, features)
    exact = exact_results(params, x, cotangent)  # the same for every port
    expected = expected_results(canonical, params, x, cotangent, seed)

    rows: list[PortComparison] = []
    loaded: list[Implementation] = []
    # Unless named, the sharded ports sit out, as in the default run: their ranks cost start-ups.
    wanted = [
        n
        for n in implementations.registered()
        if (n in names if names else n not in implementations.SHARDED)
    ]
    if implementations.CANONICAL not in wanted:
        wanted.insert(0, implementations.CANONICAL)
    for status in implementations.status(wanted):
        if status.elsewhere:  # e.g. Keras on a second backend: a process of its own
            notify(f"comparing {status.name}, in a process of its own")
            rows.append(
                compare_alone(status.name, params, x, cotangent, seed, repeats, exact, expected)
            )
            continue
        if status.state != "available":
            rows.append(PortComparison(status.name, status.state, reason=status.reason))
            continue
        port = implementations.load(status.name)
        port.pin_matmul_precision()
        notify(f"comparing {port.name}")
        rows.append(compare_port(port, expected, params, x, cotangent, seed, exact))
        rows[-1].reference = port.name == implementations.CANONICAL
        loaded.append(port)

    notify("timing warm calls, interleaved")
    by_name = {row.name: row for row in rows}
    working = [port for port in loaded if not by_name[port.name].error]
    for port, (fwd, vjp) in zip(
        working, warm_timings(working, params, x, cotangent, seed, repeats), strict=True
    ):
        set_warm(by_name[port.name], fwd, vjp)

    if first_calls:
        with tempfile.TemporaryDirectory() as scratch:
            inputs = Path(scratch) / "inputs.npz"
            np.savez(inputs, **params.as_dict(), x=x, cotangent=cotangent)
            # Every port that ran, the ones timed alone too: a fresh process
            # is where they load anyway. One at a time, as two compiling
            # processes would share the cores.
            for row in rows:
                if row.state == "available" and not row.error:
                    notify(f"first call of {row.name}, fresh process")
                    row.first_call = first_call(row.name, inputs, seed)
    from . import mindspore_graph  # here: it imports this module

    if mindspore_graph.wanted(names):  # graph mode is process-global: a process of its own
        notify("comparing mindspore in graph mode, in a process of its own")
        args = (params, x, cotangent, seed, repeats, exact, expected, first_calls)
        rows.append(mindspore_graph.compare(*args))
    return Comparison(
        seed,
        dim,
        features,
        implementations.CANONICAL,
        rows,
        time.perf_counter() - started,
        load={"before": load_before, "after": load_average()},
        cores=os.cpu_count() or 1,
        first_calls=first_calls,
    )


def compare_alone(
    name: str,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    repeats: int,
    exact: precision.Reference | None = None,
    expected: Expected | None = None,
) -> PortComparison:
    """`compare_port` and the warm timings of one port, in a fresh process (timed alone).

    Given the canonical results (`expected`), that process loads only the port's own
    framework."""
    args = (name, params, x, cotangent, seed, repeats, exact, expected)
    done = isolation.run(f"{__name__}:_compare_here", args)
    if done.status == "returned":
        return done.value
    # It raised, died, or the port would not load there.
    row = PortComparison(name, "available", timed_alone=True)
    row.error = f"in a process of its own: {done.error}"
    return row


def _compare_here(name, params, x, cotangent, seed, repeats, exact, expected) -> PortComparison:
    environment.prepare()
    # The port first: one that must import its framework first (jax_spmd's devices) can.
    port = implementations.load(name)
    port.pin_matmul_precision()
    if expected is None:
        canonical = implementations.load(implementations.CANONICAL)
        canonical.pin_matmul_precision()
        expected = expected_results(canonical, params, x, cotangent, seed)
    row = compare_port(port, expected, params, x, cotangent, seed, exact)
    row.timed_alone = True
    if not row.error:
        ((forward, vjp),) = warm_timings([port], params, x, cotangent, seed, repeats)
        set_warm(row, forward, vjp)
    return row


def failed(comparison: Comparison) -> bool:
    """Whether a port is broken, errored, exceeds a bound, fails the precision tier, or
    keeps no fewer bytes with the checkpoint on than off: any ✗ of the verdict."""
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
    return False
