"""`Record`: what one watched call kept, ran and held at its peak, each figure with its method.
Imports numpy only.

A figure a stack's instrument cannot see is a `NotObservable` with its reason, never an
estimate: `Record` refuses a figure without the method behind it.

Units: a *unit* is one `(B, F)` float32 array, `B * F * 4` bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..contract import BackwardRecord, SavedTensor

#: The block's two matmuls, in the order a block evaluation runs them.
MATMULS = ("x@W1", "a@W2")
PHASES = ("forward", "backward")


@dataclass(frozen=True)
class NotObservable:
    """A figure the instrument cannot see, and why (shown as `not observable: <reason>`)."""

    reason: str

    def __post_init__(self):
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError(f"NotObservable needs its reason, got reason={self.reason!r}")

    def __str__(self) -> str:
        return f"not observable: {self.reason}"


def observed(figure: Any) -> bool:
    """Whether a figure was seen (not a `NotObservable`)."""
    return not isinstance(figure, NotObservable)


def known(figure: Any) -> Any:
    """The figure, or None where it was not seen (the bench's tables' "not measured")."""
    return figure if observed(figure) else None


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of block `block` (its index; -1 where the instrument cannot tell) in
    `phase` (`forward`, or `backward`: a rerun), with the block's matmuls it ran; the rest of
    `MATMULS` it skipped (an early stop), counted as skipped, not as part of a block."""

    block: int
    phase: str
    ran: tuple[str, ...]

    def __post_init__(self):
        if self.phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {self.phase!r}")
        unknown = set(self.ran) - set(MATMULS)
        if unknown:
            raise ValueError(f"ran must hold matmuls of {MATMULS}, got {sorted(unknown)}")

    @property
    def skipped(self) -> tuple[str, ...]:
        return tuple(m for m in MATMULS if m not in self.ran)


#: Every figure of a record, and whether it needs a method (all do).
FIGURES = (
    "saved",
    "evaluations",
    "forward_matmuls",
    "backward_matmuls",
    "recomputed",
    "regions",
    "reruns",
    "peak_bytes",
    "peak_batch_bytes",
    "peak_fixed_bytes",
    "matmuls",
    "phase_block_matmuls",
    "program_temp_bytes",
)
_NOT_WATCHED = NotObservable("not watched in this call")


@dataclass(frozen=True)
class Record:
    """What one watched call showed. Each figure is a value or a `NotObservable`.

    - `saved`: every tensor the forward pass left for the backward pass, by role and origin,
      with its bytes (`SavedTensor.nbytes`) and memory space.
    - `evaluations`: every block evaluation, forward pass and backward pass (`Evaluation`).
    - `forward_matmuls`, `backward_matmuls`: every matmul the framework ran in each pass
      (the gradient's included).
    - `recomputed`: forward operations the backward pass ran again, by name.
    - `regions`: checkpoint regions entered in the forward pass; `reruns`: regions the backward
      pass differentiated again.
    - `peak_bytes`: the most bytes alive during the backward pass, above those alive before
      the call; `peak_batch_bytes` its part that grows with the batch, `peak_fixed_bytes` the
      part that does not (`split_by_batch`).
    - `matmuls`: every matmul of the call, both passes together, where a compiled program
      makes them one (`forward_matmuls` and `backward_matmuls` then not observable).
    - `phase_block_matmuls`: phase -> the block's matmuls (`MATMULS`) run in it, where the
      evaluations cannot be told apart (a compiled program has no block boundaries).
    - `program_temp_bytes`: a compiled program's temporary buffers, as its compiler plans them.
    - `methods`: figure -> the method behind it; every observed figure has one.
    """

    instrument: str
    methods: Mapping[str, str]
    saved: tuple[SavedTensor, ...] | NotObservable = _NOT_WATCHED
    evaluations: tuple[Evaluation, ...] | NotObservable = _NOT_WATCHED
    forward_matmuls: int | NotObservable = _NOT_WATCHED
    backward_matmuls: int | NotObservable = _NOT_WATCHED
    recomputed: Mapping[str, int] | NotObservable = _NOT_WATCHED
    regions: int | NotObservable = _NOT_WATCHED
    reruns: int | NotObservable = _NOT_WATCHED
    peak_bytes: int | NotObservable = _NOT_WATCHED
    peak_batch_bytes: int | NotObservable = _NOT_WATCHED
    peak_fixed_bytes: int | NotObservable = _NOT_WATCHED
    matmuls: int | NotObservable = _NOT_WATCHED
    phase_block_matmuls: Mapping[str, int] | NotObservable = _NOT_WATCHED
    program_temp_bytes: int | NotObservable = _NOT_WATCHED

    def __post_init__(self):
        unexplained = [f for f in FIGURES if observed(getattr(self, f)) and f not in self.methods]
        if unexplained:
            raise ValueError(f"methods: no method for the figures {unexplained}")

    def merged(self, other: Record) -> Record:
        """This record with the figures `other` observed and this one did not."""
        taken = {
            f: getattr(other, f)
            for f in FIGURES
            if observed(getattr(other, f)) and not observed(getattr(self, f))
        }
        methods = {**self.methods, **{f: other.methods[f] for f in taken}}
        instrument = f"{self.instrument}; {other.instrument}" if taken else self.instrument
        return dataclasses.replace(self, instrument=instrument, methods=methods, **taken)

    def evaluated(self, phase: str) -> tuple[Evaluation, ...]:
        """The block evaluations of one phase (raises where evaluations were not observed)."""
        return tuple(e for e in _seen(self, "evaluations") if e.phase == phase)

    def block_matmuls(self, phase: str) -> int:
        """The block's matmuls (`MATMULS`) its evaluations ran in one phase (or, where they
        cannot be told apart, `phase_block_matmuls`)."""
        if not observed(self.evaluations) and observed(self.phase_block_matmuls):
            return self.phase_block_matmuls[phase]
        return sum(len(e.ran) for e in self.evaluated(phase))

    def all_matmuls(self) -> int | None:
        """Every matmul of the call: both passes', or `matmuls` (None where neither is seen)."""
        passes = (self.forward_matmuls, self.backward_matmuls)
        if all(map(observed, passes)):
            return sum(passes)
        return self.matmuls if observed(self.matmuls) else None

    def kept_bytes(self) -> int:
        """The bytes of the saved inputs and activations (parameters left out)."""
        return sum(t.nbytes for t in _seen(self, "saved") if t.origin in SavedTensor.KEPT)

    def backward_record(self) -> BackwardRecord:
        """The record as the properties read it (`contract.BackwardRecord`)."""

        def value(name: str) -> Any:
            figure = getattr(self, name)
            return figure if observed(figure) else None

        return BackwardRecord(
            self.instrument,
            _seen(self, "saved"),
            recomputed=dict(value("recomputed") or {}),
            checkpoint_regions=value("reruns"),
            backward_matmuls=value("backward_matmuls"),
            forward_matmuls=value("forward_matmuls"),
        )


def _seen(record: Record, name: str) -> Any:
    figure = getattr(record, name)
    if not observed(figure):
        raise ValueError(f"{name}: {figure}")
    return figure


def split_by_batch(at_b: Record, at_2b: Record) -> Record:
    """`at_b`'s peak split in two, from the same call at batch B and 2B: the part that grows
    with the batch, `peak(2B) - peak(B)`, and the rest, `2 peak(B) - peak(2B)` (a peak linear
    in B: fixed + growing). The method is the same for every placement (a row's regions are
    its own figure: the fixed part per region is `peak_fixed_bytes / regions`)."""
    low, high = _seen(at_b, "peak_bytes"), _seen(at_2b, "peak_bytes")
    method = (
        f"{at_b.methods['peak_bytes']}, at B and 2B: growing = peak(2B) - peak(B), "
        "fixed = 2 peak(B) - peak(2B)"
    )
    return dataclasses.replace(
        at_b,
        peak_batch_bytes=high - low,
        peak_fixed_bytes=2 * low - high,
        methods={**at_b.methods, "peak_batch_bytes": method, "peak_fixed_bytes": method},
    )
