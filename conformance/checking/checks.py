"""Assertion helpers: each message names the port, the quantity, the index, the error, the bound."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tolerance import ulp_distance


class ConformanceError(AssertionError):
    """A port broke a property. The message says which port, what, where, and by how much;
    `worst_ratio`, where a bound was broken, its worst error/bound (infinite for a wrong
    shape or a non-finite value), so that a summary's worst figure includes the failures."""

    worst_ratio: float | None = None


def fail(port: str, quantity: str, detail: str, worst_ratio: float | None = None) -> None:
    error = ConformanceError(f"[{port}] {quantity}: {detail}")
    error.worst_ratio = worst_ratio
    raise error


def check_count(
    port: str, quantity: str, label: str, field: str, seen: int | None, wanted: int | None, why: str
) -> None:
    """Fail unless an instrument's count `seen` of `label` is `wanted` (None: not checked).
    A count the expectation names is required: a record without it (`field` absent or null)
    fails, saying it is not reported; `why` ends the message (the reason, whose table)."""
    if wanted is None or seen == wanted:
        return
    if seen is None:
        fail(
            port,
            quantity,
            f"{label}: not reported (its records have no {field}), expected {wanted}{why}: a "
            "count the expectation names must be reported (docs/PROTOCOL.md, Evidence records)",
        )
    fail(port, quantity, f"runs {seen} {label}, expected {wanted}{why}")


def check_shape(port: str, quantity: str, actual: np.ndarray, shape: tuple[int, ...]) -> None:
    if np.shape(actual) != shape:
        fail(port, quantity, f"shape {np.shape(actual)}, expected {shape}", float("inf"))


@dataclass(frozen=True)
class Measurement:
    """How far `actual` is from `expected`, against a per-element bound.

    **Arguments:**

    - `shape_ok`: whether the shapes agree (nothing else is measured if not).
    - `index`: the element with the worst error/bound ratio (None if empty).
    - `error`, `bound`: `|actual - expected - shift|` and the bound there.
    - `worst_ratio`: the largest error/bound; above 1 breaks the bound
      (infinite for a non-finite value, or an error where the bound is 0).
    - `over`: how many elements break the bound.
    - `largest_error`: the largest error anywhere, and `bound_at_largest`
      the bound at its element.
    """

    shape_ok: bool
    index: tuple[int, ...] | None = None
    error: float = 0.0
    bound: float = 0.0
    worst_ratio: float = 0.0
    over: int = 0
    size: int = 0
    non_finite: tuple[int, ...] | None = None
    largest_error: float = 0.0
    bound_at_largest: float = 0.0
    flipped: bool = False  # the worst element's difference had a kink flip taken out


def measure(
    actual: np.ndarray,
    expected: np.ndarray,
    bound: np.ndarray,
    shift: np.ndarray | None = None,
) -> Measurement:
    """Compare `actual` with `expected` against `bound`, element by element; never raises.

    `shift` is a difference already explained (a relu unit on the other side
    of its kink); it is 0 by default.
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return Measurement(shape_ok=False)
    if actual.size == 0:
        return Measurement(shape_ok=True)
    error = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    if shift is not None:
        error = np.abs(actual.astype(np.float64) - expected - np.asarray(shift, np.float64))
    finite = np.isfinite(actual)
    error = np.where(finite, error, np.inf)
    bound = np.broadcast_to(np.asarray(bound, np.float64), error.shape)
    with np.errstate(invalid="ignore"):  # inf / inf: a non-finite value, set just below
        ratio = np.divide(error, bound, out=np.where(error > 0, np.inf, 0.0), where=bound > 0)
    ratio = np.where(finite, ratio, np.inf)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    largest = np.unravel_index(int(np.argmax(error)), error.shape)
    non_finite = None if finite.all() else tuple(int(i) for i in np.argwhere(~finite)[0])
    flipped = shift is not None and np.broadcast_to(shift, error.shape)[worst] != 0
    return Measurement(
        shape_ok=True,
        index=tuple(int(i) for i in worst),
        error=float(error[worst]),
        bound=float(bound[worst]),
        worst_ratio=float(ratio[worst]),
        over=int((ratio > 1).sum()),
        size=int(ratio.size),
        non_finite=non_finite,
        largest_error=float(error[largest]),
        bound_at_largest=float(bound[largest]),
        flipped=bool(flipped),
    )


def within(
    port: str,
    quantity: str,
    actual: np.ndarray,
    expected: np.ndarray,
    bound: np.ndarray,
    shift: np.ndarray | None = None,
) -> float:
    """Check `|actual - expected - shift| <= bound` everywhere; return the worst error/bound ratio.

    `shift` is a difference already explained (a relu unit on the other side
    of its kink); it is 0 by default.
    """
    expected, actual = np.asarray(expected), np.asarray(actual)
    found = measure(actual, expected, bound, shift)
    if not found.shape_ok:
        check_shape(port, quantity, actual, expected.shape)
    if found.non_finite is not None:
        index = _index(found.non_finite)
        fail(port, quantity, f"non-finite value {actual[index]} at index {index}", float("inf"))
    if found.worst_ratio > 1.0:
        index = _index(found.index)
        note = " after a relu unit's side flip is taken out" if found.flipped else ""
        fail(
            port,
            quantity,
            f"index {index}: got {_number(actual[index])}, "
            f"canonical {_number(expected[index])}, "
            f"error{note} {found.error:.3e} > bound {found.bound:.3e} "
            f"({found.over} of {found.size} entries out of bounds)",
            found.worst_ratio,
        )
    return found.worst_ratio


def within_ulps(
    port: str, quantity: str, actual: np.ndarray, expected: np.ndarray, ulps: int
) -> float:
    """Check float32 values agree to `ulps` units in the last place; return worst/allowed."""
    expected = np.asarray(expected, np.float32)
    actual = np.asarray(actual)
    check_shape(port, quantity, actual, expected.shape)
    distance = ulp_distance(actual, expected)
    worst = np.unravel_index(np.argmax(distance), distance.shape) if distance.size else ()
    if distance.size and distance[worst] > ulps:
        fail(
            port,
            quantity,
            f"index {_index(worst)}: got {_number(actual[worst])}, "
            f"canonical {_number(expected[worst])}, "
            f"error {int(distance[worst])} ulp > bound {ulps} ulp "
            f"({int((distance > ulps).sum())} of {distance.size} entries out of bounds)",
            float(distance[worst]) / ulps,
        )
    return float(distance.max()) / ulps if distance.size else 0.0


def bitwise_equal(port: str, quantity: str, actual: np.ndarray, expected: np.ndarray) -> None:
    """Check two arrays hold the very same bits (so -0.0 differs from 0.0)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    check_shape(port, quantity, actual, expected.shape)
    if actual.dtype != expected.dtype:
        fail(port, quantity, f"dtype changed from {expected.dtype} to {actual.dtype}")
    differs = actual.view(np.uint8).reshape((*actual.shape, -1)) != expected.view(np.uint8).reshape(
        (*expected.shape, -1)
    )
    if differs.any():
        index = _index(np.argwhere(differs.any(axis=-1))[0])
        fail(
            port, quantity, f"index {index}: {_number(actual[index])} != {_number(expected[index])}"
        )


def _number(value) -> str:
    # Nine significant digits tell any two float32 values apart; repr adds "np.float32(...)".
    return f"{value.item():.9g}" if np.ndim(value) == 0 and np.isrealobj(value) else repr(value)


def _index(index) -> tuple[int, ...] | int:
    index = tuple(int(i) for i in index)
    return index[0] if len(index) == 1 else index
