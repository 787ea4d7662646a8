"""Assertion helpers: each message names the port, the quantity, the index, the error, the bound."""

from __future__ import annotations

import numpy as np

from .tolerance import ulp_distance


class ConformanceError(AssertionError):
    """A port broke a property. The message says which port, what, where, and by how much."""


def fail(port: str, quantity: str, detail: str) -> None:
    raise ConformanceError(f"[{port}] {quantity}: {detail}")


def check_shape(port: str, quantity: str, actual: np.ndarray, shape: tuple[int, ...]) -> None:
    if np.shape(actual) != shape:
        fail(port, quantity, f"shape {np.shape(actual)}, expected {shape}")


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
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    check_shape(port, quantity, actual, expected.shape)
    if not np.all(np.isfinite(actual)):
        index = _index(np.argwhere(~np.isfinite(actual))[0])
        fail(port, quantity, f"non-finite value {actual[index]} at index {index}")
    error = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    if shift is not None:
        error = np.abs(actual.astype(np.float64) - expected - np.asarray(shift, np.float64))
    bound = np.broadcast_to(np.asarray(bound, np.float64), error.shape)
    ratio = np.divide(error, bound, out=np.where(error > 0, np.inf, 0.0), where=bound > 0)
    worst = np.unravel_index(np.argmax(ratio), ratio.shape) if ratio.size else ()
    if ratio.size and ratio[worst] > 1.0:
        flipped = shift is not None and np.broadcast_to(shift, error.shape)[worst] != 0
        note = " after a relu unit's side flip is taken out" if flipped else ""
        fail(
            port,
            quantity,
            f"index {_index(worst)}: got {_number(actual[worst])}, "
            f"canonical {_number(expected[worst])}, "
            f"error{note} {error[worst]:.3e} > bound {bound[worst]:.3e} "
            f"({int((ratio > 1).sum())} of {ratio.size} entries out of bounds)",
        )
    return float(ratio.max()) if ratio.size else 0.0


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
