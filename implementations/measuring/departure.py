"""`CountModel`: where a framework's figures leave the schedule model, as counts in code with
their upstream reference. Imports numpy only (through `implementations.schedules`).

`bench --schedules` (`conformance.benchmark.schedules.judge`) accepts a figure outside the
model's tolerance only where a stack's count model predicts that figure and the measurement
meets the prediction within the same tolerance. A reason in words predicts nothing, and so
excuses nothing.

Figures (`FIGURES`), each a function of the placement's items (its regions, their nesting, L):

- `forward_matmuls`: the block's matmuls (x @ W1, a @ W2) run in both passes together;
- `peak_units`: the peak's part that grows with the batch, in units (a `(B, F)` float32 array).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..regions import Region
from ..schedules import Departure, Item

FIGURES = ("forward_matmuls", "peak_units")
#: A prediction: the placement's items -> the figure.
Predict = Callable[[tuple[Item, ...]], float]


@dataclass(frozen=True)
class CountModel:
    """A departure from the model: `reason` (one line), `reference` (the upstream source, a
    file:line at the pinned version, or a URL) and `predicts`, figure -> its prediction over
    a placement's items (`FIGURES`). Without a prediction it is a reason in words: it explains
    nothing (`words`)."""

    reason: str
    reference: str = ""
    predicts: Mapping[str, Predict] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError(f"reason: a count model needs its reason, got {self.reason!r}")
        unknown = sorted(set(self.predicts) - set(FIGURES))
        if unknown:
            raise ValueError(f"predicts: figures are {FIGURES}, got {unknown}")
        if not all(callable(p) for p in self.predicts.values()):
            raise TypeError("predicts: each prediction must be a function of the items")
        if self.predicts and (not isinstance(self.reference, str) or not self.reference.strip()):
            raise ValueError("reference: a count model names its upstream source (file:line)")

    @property
    def words(self) -> bool:
        """Whether it predicts nothing: a reason in words, which excuses no figure."""
        return not self.predicts

    def predict(self, items: tuple[Item, ...]) -> dict[str, float]:
        """Each figure it predicts over the placement's items."""
        return {figure: predict(items) for figure, predict in self.predicts.items()}

    def __str__(self) -> str:
        if self.words:
            return f"{self.reason} (in words: no count model, excuses nothing)"
        return f"{self.reason} (predicts {', '.join(self.predicts)}; {self.reference})"


#: A legacy `Departure`'s stand-in reference: its stack's file names none.
NO_REFERENCE = "not declared: a schedules.Departure, whose stack names no upstream source"


def count_model(declared: Any) -> CountModel:
    """A stack's declaration as a count model: a `CountModel` as it is; a
    `schedules.Departure` that states its count (`held_per_level`, `tape_to_the_end`) as its
    peak prediction (`Departure.peak_units`); a reason in words (a string, or a `Departure`
    without a count) as a count model that predicts nothing."""
    if isinstance(declared, CountModel):
        return declared
    departure = Departure.of(declared)
    if not departure.counted:
        return CountModel(departure.reason)
    reference = getattr(departure, "reference", "") or NO_REFERENCE
    return CountModel(str(departure), reference, {"peak_units": departure.peak_units})


#: The schedules that place regions: what a count model of every region covers (`every_region`).
REGION_SCHEDULES = ("every", "segments", "nested", "binomial")


def every_region(reason: str, reference: str, peak_units: Predict) -> dict[str, CountModel]:
    """`DEPARTURES` (schedule -> count model) of a stack whose count of the peak, `peak_units`,
    holds for every schedule that places regions (`REGION_SCHEDULES`)."""
    return {
        name: CountModel(reason, reference, {"peak_units": peak_units}) for name in REGION_SCHEDULES
    }


def open_regions_peak(items: tuple[Item, ...], last: int, other: int) -> int:
    """The peak in units over a placement's `items` where a region's gradient runs inside the
    outer backward (a reentrant checkpoint, `tf.recompute_grad`): the model's count (an
    input a region, an input and its internals a plain block), each open region holding
    `last` units more while it reruns where it is its level's last item, `other` where it is
    not. Recursive: as deep as the placement nests (binomial(2) at L = 256: 22)."""
    kept = peak = 0
    for n, item in enumerate(items):
        if isinstance(item, Region):
            kept += 1  # its input
            held = last if n == len(items) - 1 else other
            inner = open_regions_peak(item.items, last, other)
            peak = max(peak, kept + inner + held - 1)  # its input is its first item's
        else:
            kept += 2  # its input and its internals
    return max(kept, peak)
