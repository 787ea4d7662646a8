"""How a spread of timed samples is told, for every bench table."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from ..numbers import number

#: A spread (interquartile range over the median) above this is noise.
NOISE = 0.5


def relative_spread(values: Sequence[float]) -> tuple[float | None, float | None]:
    """(median, interquartile range over the median) of `values`; the spread is None under
    4 values (too few for quartiles)."""
    found = [v for v in (number(v) for v in values) if v is not None]
    if not found:
        return None, None
    median = statistics.median(found)
    if len(found) < 4 or median == 0:
        return median, None
    q1, _, q3 = statistics.quantiles(found, n=4)
    return median, (q3 - q1) / median


def spread_words(relative: float | None, n: int, noise: float = NOISE) -> str:
    """`n=11 · IQR 8%`, `n=11 · IQR 70%: noise`, or `n=2 · too few for an IQR`."""
    if relative is None:
        return f"n={n} · too few for an IQR" if n < 4 else f"n={n}"
    words = f"n={n} · IQR {relative:.0%}"
    return words + ": noise" if relative > noise else words


def with_spread(value: float | None, spread: float | None, spec: str = ".2f") -> str:
    """`12.30 ±4%`; `±?` when one repeat cannot say how far to trust it; `-` for no value."""
    if value is None:
        return "-"
    return f"{format(value, spec)} ±{'?' if spread is None else format(spread, '.0%')}"
