"""What a comparison holds, as plain data: a row per port (`PortComparison`) with its
differences (`Diff`), precision (`Bits`), residuals (`Residuals`) and times (`Timing`), the
canonical's results every row is held to (`Expected`), and the whole (`Comparison`); with
`diff` and `residuals`, which turn arrays and records into that data."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from implementations.contract import BackwardRecord

from ..checking.checks import measure
from ..checking.tolerance import INIT_ULPS
from ..jsonable import to_data
from .load import BUSY_CORES


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
    measured_by: str = ""  # "suite" or "port" (`checking.provenance`)
    # The matmuls the backward pass runs, and the forward ones it reruns where the instrument
    # counts them apart (`BackwardRecord`): the reruns' measure, as property (k)'s.
    backward_matmuls: int | None = None
    rerun_matmuls: int | None = None


@dataclass
class PortComparison:
    """One port's row."""

    name: str
    state: str  # "available", "unavailable" or "broken"
    reason: str = ""
    framework: str = ""
    reference: bool = False  # the canonical port, compared with itself
    measured_by: str = ""  # who measured its evidence: "suite" or "port" (`checking.provenance`)
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
    # composition_matrix.CompositionCell, per composition case
    compositions: list[Any] = field(default_factory=list)
    # state_matrix.StateCell, per API variant of the stateful block
    states: list[Any] = field(default_factory=list)
    warm_forward_seconds: float | None = None  # the median
    warm_vjp_seconds: float | None = None
    # What the VJP time timed: "prepared_vjp" (the framework's call alone) or "vjp" (the
    # contract's call, the port's setup included); `warm.VJP_METHODS` says each in words.
    warm_vjp_method: str = ""
    # Half the interquartile range of the samples, by "forward" and "vjp", and their count.
    warm_spread: dict[str, float] = field(default_factory=dict)
    warm_samples: int = 0
    first_call: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    # The process (`lanes`) that measured it, named for its framework: its warm times are
    # interleaved with those of the other ports of its lane only.
    lane: str = ""


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
    # Where it ran (`running.machine.describe`, as a run report's `machine`), read when it ran;
    # empty in a report written before the field.
    machine: dict[str, Any] = field(default_factory=dict)

    @property
    def loaded(self) -> bool:
        """Whether other work shared the machine, so that the times are noisy: other processes
        kept `load.BUSY_CORES` busy while the ports were timed; where that is not measured,
        the load average exceeded the cores before or after the run (a 1-minute average lags:
        it still counts work that ended before the timings began)."""
        if "others_while_timing" in self.load:
            return self.load["others_while_timing"] >= BUSY_CORES
        return any(self.load.get(when, 0.0) > self.cores for when in ("before", "after"))

    @property
    def failed(self) -> bool:
        """Whether a port is broken, errored, exceeds a bound, fails the precision tier, keeps no
        fewer bytes with the checkpoint on than off (any ✗ of the verdict), or has a policy or
        composition cell that raised, disagrees with the canonical or shows what is not
        declared, or a stateful-block cell that contradicts its declaration."""
        for row in self.ports:
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
            if any(cell.failed for cell in (*row.policies, *row.compositions, *row.states)):
                return True
        return False

    def to_json(self) -> dict[str, Any]:
        return {"kind": "compare", **to_data(self), "notes": NOTES}


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
    "compositions": "every composition case (implementations.composition): the region once, "
    "wrapped twice, under a trainer's region; expressible or not, the kept roles and bytes, the "
    "forward matmuls in the forward pass and again in the backward, agreement with the "
    "canonical's checkpoint, and the stack's declaration (compare.composition_matrix)",
    "states": "every API variant of the stateful block (implementations.stateful): declared "
    "replay, stream and updates with each degradation's upstream reference, the fix and the "
    "repro script; measured on one step (batch 8, rate 0.5): the share of the mask a recompute "
    "changed, whether the RNG state moved, the canonical's updates the running mean shows; "
    "each part held to the declaration by property (l)'s checks (compare.state_matrix)",
    "residuals": "backward_record(params, x, checkpoint=off/on): count and bytes leave "
    "parameters out; the list holds everything the instrument saw",
    "warm": "median seconds per call over samples interleaved with the other ports of the "
    "same framework's process (lane: its name), one process timed at a time, after a warm-up "
    "call "
    "(warm_spread: half the interquartile range of the samples; warm_samples: their count); the "
    "forward is nn_checkpoint_forward on the framework's own x with a new seed per call (its "
    "init included), synchronised by reading the result back to numpy; the VJP "
    "(warm_vjp_method) is the framework's forward and backward call alone, its model and "
    "arrays made once before timing (prepared_vjp), or, for a port that offers no "
    "prepared_vjp, the contract's vjp whole, numpy in and out, its per-call setup included "
    "(vjp; the table marks it +setup)",
    "load": "the 1-minute load average before and after the run (after counts the "
    "comparison's own processes); others_while_timing: the cores that other processes kept "
    "busy while the ports were timed (Linux: all CPU time from /proc/stat minus the "
    "comparison's own). A load above the cores before, or other processes busy on a whole "
    "core while timing, mark the times noisy",
    "first_call": "only when asked for (first_calls): a fresh Python process per port, "
    "every compilation cache off: "
    "import = loading the port (its framework); forward = the first nn_checkpoint_forward "
    "(init and apply: tracing, compiling, running); vjp = the first contract vjp after it",
}


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
        measured_by=record.measured_by,
        backward_matmuls=record.backward_matmuls,
        rerun_matmuls=record.rerun_matmuls,
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
