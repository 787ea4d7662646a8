"""The framework-free half of the bench: configurations, measurements, the interleaved sweep.

A framework module (`jax_stack`, `torch_stack`) builds one `Case` per
configuration; this module asks each case what it saves and how much memory
it needs, then times all cases of a depth together: every repeat runs each
case once, in a fresh random order, so the machine's noise falls on all alike.
Imports numpy and the numpy-only contract, never a framework.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from implementations import manifests

# The stacks' side of the bench (`implementations.bench_case`), under the bench's names too.
from implementations.bench_case import MODES, Case, Data, Static  # noqa: F401
from implementations.contract import SavedTensor

from ..jsonable import to_data

FLOAT32_BYTES = 4
SAVED_TARGET = 1.1  # saved bytes with a checkpoint per block, over the analytic minimum
TIME_TARGET = 1.4  # step time with a checkpoint per block, over no checkpoint, at the deepest L


def _per_stack(key: str) -> str:
    """Every bench stack's clause for `key` (its manifest entry's notes), as `name: clause`."""
    clauses = [
        f"{entry.name}: {entry.notes[key]}"
        for manifest in manifests.manifests()
        for entry in manifest.bench
        if key in entry.notes
    ]
    return "; ".join(clauses)


def mode_titles() -> dict[str, str]:
    """What each mode runs, each stack's way of `save-mm` named (from the manifests)."""
    return {
        "none": "no checkpoint",
        "full": "a checkpoint around every block; the backward pass recomputes what it needs",
        "save-mm": "a checkpoint around every block whose policy saves matmul outputs "
        f"({_per_stack('save-mm')})",
    }


def definitions() -> dict[str, str]:
    """What each figure of a result means, each stack's instrument named (from the manifests)."""
    return {
        "saved_bytes": "bytes of the tensors the forward pass keeps for the backward pass, read "
        f"off the framework's own instrument ({_per_stack('saved_bytes')}). Parameters, and "
        "values computed from parameters alone, are left out: they live whether or not "
        "anything is saved; so are constants (JAX keeps a zeros buffer for the relu's select, "
        "which depends on no data). The stack's input x counts: it is block 0's input.",
        "analytic_minimum": "L*B*F*4 bytes: the block inputs only, the least a checkpoint per "
        "block can keep.",
        "temp_bytes": "the compiled program's temporary buffers for one forward+backward step, "
        "where the stack's compiler reports them; arguments and the returned gradients are not "
        f"in it ({_per_stack('temp_bytes')}). None where a stack says none.",
        "peak_bytes": "the highest allocation during one step above what was live before it, "
        f"from the stack's allocator ({_per_stack('peak_bytes')}). None where a stack says none.",
        "matmuls": "matrix products executed per step, recomputed ones included "
        f"({_per_stack('matmuls')}). None where a stack says none.",
        **TIMING_DEFINITIONS,
    }


TIMING_DEFINITIONS = {
    "step_seconds": "one forward+backward: the gradient, with respect to every parameter, of "
    "the scalar loss sum(y * c) for a fixed random cotangent c of y's shape, computed as the "
    "VJP of the stack with c (so the loss keeps no residual of its own, and no constant "
    "cotangent lets a compiler fold the last matmuls away); median over interleaved repeats, "
    "with n (the repeats) and step_quartiles (the middle half of the samples).",
    "time_ratio": "step time over the same framework and variant's no-checkpoint step time, "
    "taken within each repeat, median over repeats; time_ratio_quartiles hold the middle half.",
    "time_ratio_spread": "half the interquartile range of the per-repeat ratios, relative to "
    "their median: a ratio of 1.30 with spread 0.04 has its middle half of repeats within "
    "1.30 ± 4%. With fewer than 4 repeats the quartiles cannot be told from the extremes, so "
    "the spread is half the whole range (the more cautious figure); with 1 repeat it is "
    "unknown. The sweep adds repeats (up to max_repeats) until every spread is within "
    "target_spread.",
    "verdict": "a target is met (✓) or missed (✗) only when the ratio's spread is within "
    "target_spread and the whole band ratio * (1 ± spread) lies on one side of the target; "
    "otherwise it reads inconclusive, whatever the median says.",
}


@dataclass(frozen=True)
class Settings:
    """One sweep: depths L, batch B, width F, timing repeats, and the seed of the data."""

    # B > F, so that activations, not weights and their gradients, fill memory.
    depths: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    batch: int = 1024
    features: int = 256
    repeats: int = 11  # the first round of interleaved samples; more follow where needed
    seed: int = 0
    max_repeats: int = 55
    target_spread: float = 0.05

    def __post_init__(self):
        if not self.depths or min(self.depths) < 1:
            raise ValueError(f"depths must be positive integers, got {self.depths}")
        if self.batch < 1 or self.features < 1 or self.repeats < 1:
            raise ValueError(f"batch, features and repeats must be >= 1: {self}")
        if self.max_repeats < self.repeats:
            raise ValueError(f"max_repeats must be at least repeats: {self}")


@dataclass
class Result:
    """One configuration at one depth: everything the tables and the plot show."""

    framework: str
    variant: str
    mode: str
    depth: int
    batch: int
    features: int
    saved_count: int
    saved_bytes: int
    analytic_minimum: int
    temp_bytes: int | None
    peak_bytes: int | None
    matmuls: int | None
    residuals: list[dict[str, Any]]
    step_seconds: list[float] = field(default_factory=list)
    time_ratios: list[float] = field(default_factory=list)
    # A time target its stack holds it to at every depth (None: the usual, at the deepest).
    time_target_every_depth: float | None = None

    @property
    def label(self) -> str:
        return label(self.framework, self.variant, self.mode)

    @property
    def saved_ratio(self) -> float:
        return self.saved_bytes / self.analytic_minimum

    @property
    def step_median(self) -> float | None:
        return statistics.median(self.step_seconds) if self.step_seconds else None

    @property
    def n(self) -> int:
        """How many timed repeats the figures rest on."""
        return len(self.step_seconds)

    @property
    def step_quartiles(self) -> tuple[float, float, float] | None:
        return quartiles(self.step_seconds)

    @property
    def step_spread(self) -> float | None:
        """Half the interquartile range of the step times, relative to their median."""
        return relative_spread(self.step_seconds)

    @property
    def time_ratio(self) -> float | None:
        return statistics.median(self.time_ratios) if self.time_ratios else None

    @property
    def time_ratio_quartiles(self) -> tuple[float, float, float] | None:
        return quartiles(self.time_ratios)

    @property
    def time_ratio_spread(self) -> float | None:
        """Half the interquartile range of the per-repeat ratios, relative to their median."""
        return relative_spread(self.time_ratios)

    def to_json(self) -> dict[str, Any]:
        data = to_data(self)
        data.update(
            label=self.label,
            saved_ratio=self.saved_ratio,
            n=self.n,
            step_median=self.step_median,
            step_quartiles=self.step_quartiles,
            step_spread=self.step_spread,
            time_ratio=self.time_ratio,
            time_ratio_quartiles=self.time_ratio_quartiles,
            time_ratio_spread=self.time_ratio_spread,
        )
        return data


def label(framework: str, variant: str, mode: str) -> str:
    """A configuration's name in tables and plot legends, e.g. `jax scan · full`."""
    head = f"{framework} {variant}" if variant else framework
    return f"{head} · {mode}"


def analytic_minimum(depth: int, batch: int, features: int) -> int:
    """`L*B*F*4`: the bytes of the L block inputs, float32 `(B, F)` each."""
    return depth * batch * features * FLOAT32_BYTES


def make_data(settings: Settings, depth: int) -> Data:
    """Parameters for `depth` blocks, an input and a cotangent, from `settings.seed`.

    The first kernel of a block is He-scaled, so that activations keep their
    size through relu and depth: no subnormals, whose slow arithmetic would
    distort the times.
    """
    rng = np.random.default_rng(settings.seed)
    f = settings.features
    blocks = []
    for _ in range(depth):
        w1 = rng.standard_normal((f, f), np.float32) * np.float32(np.sqrt(2.0 / f))
        w2 = rng.standard_normal((f, f), np.float32) * np.float32(np.sqrt(1.0 / f))
        blocks.append((w1, np.zeros(f, np.float32), w2, np.zeros(f, np.float32)))
    x = rng.standard_normal((settings.batch, f), np.float32)
    cotangent = rng.standard_normal((settings.batch, f), np.float32)
    return Data(blocks, x, cotangent)


def summarise_residuals(saved: Sequence[SavedTensor]) -> list[dict[str, Any]]:
    """The residuals grouped by (shape, dtype, origin), with a count: compact for JSON."""
    groups = Counter((t.shape, t.dtype, t.origin) for t in saved)
    return [
        {"shape": list(shape), "dtype": dtype, "origin": origin, "count": count}
        for (shape, dtype, origin), count in groups.items()
    ]


def result_of(case: Case, static: Static, depth: int, settings: Settings) -> Result:
    """A `Result` from what a case measured (timings are filled in later)."""
    kept = [t for t in static.saved if t.origin in SavedTensor.KEPT]
    return Result(
        framework=case.framework,
        variant=case.variant,
        mode=case.mode,
        depth=depth,
        batch=settings.batch,
        features=settings.features,
        saved_count=len(kept),
        saved_bytes=sum(t.nbytes for t in kept),
        analytic_minimum=analytic_minimum(depth, settings.batch, settings.features),
        temp_bytes=static.temp_bytes,
        peak_bytes=static.peak_bytes,
        matmuls=static.matmuls,
        residuals=summarise_residuals(static.saved),
    )


def quartiles(values: Sequence[float]) -> tuple[float, float, float] | None:
    """`(q1, median, q3)` of `values`; None for none.

    With fewer than 4 values the quartiles cannot be told from the extremes:
    `(min, median, max)`, the cautious choice (for 3 values it is what
    `statistics.quantiles` gives; for 2 it would extrapolate past them).
    """
    if not values:
        return None
    if len(values) < 4:
        return (min(values), statistics.median(values), max(values))
    q1, median, q3 = statistics.quantiles(values, n=4)
    return (q1, median, q3)


def relative_spread(values: Sequence[float]) -> float | None:
    """Half the interquartile range of `values`, over their median (`quartiles`).

    None for fewer than 2 values: one sample says nothing of its spread.
    """
    if len(values) < 2:
        return None
    q1, median, q3 = quartiles(values)
    return (q3 - q1) / 2 / median


def verdict(value: float | None, spread: float | None, target: float, target_spread: float) -> str:
    """`"met"`, `"missed"` or `"inconclusive"`: is `value` at most `target`?

    Only a spread within `target_spread` whose band `value * (1 +- spread)`
    lies wholly on one side of the target decides; anything else, an
    unknown spread (one repeat) included, is inconclusive.
    """
    if value is None or spread is None or spread > target_spread:
        return "inconclusive"
    if value * (1 + spread) <= target:
        return "met"
    if value * (1 - spread) > target:
        return "missed"
    return "inconclusive"


def attach_timings(
    results: Sequence[Any],
    samples: Sequence[list[float]],
    group: Callable[[Any], Any] = lambda r: (r.framework, r.variant),
    is_baseline: Callable[[Any], bool] = lambda r: r.mode == "none",
) -> None:
    """Store each result's samples and its per-repeat ratio to the baseline of its group
    (by default its own no-checkpoint case)."""
    for result, seconds in zip(results, samples, strict=True):
        result.step_seconds = list(seconds)
    baseline = {group(r): r for r in results if is_baseline(r)}
    for result in results:
        base = baseline.get(group(result))
        if base is not None:
            result.time_ratios = [
                t / b for t, b in zip(result.step_seconds, base.step_seconds, strict=True)
            ]
