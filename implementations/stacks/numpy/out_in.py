"""The layout torch's and MLX's `Linear` share: weight `(out, in)`, bias `(out,)`. Numpy only.

The canonical kernel is `(in, out)`, so each weight is its transpose. The
ports name the arrays as their modules do (`fc1.weight`, `fc1.bias`,
`fc2.weight`, `fc2.bias`) and move them into and out of their framework
themselves; the transposes and the shape checks are here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...contract import Grads, Params

NAMES = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


def from_params(params: Params) -> dict[str, np.ndarray]:
    """Canonical params in this layout, by name (views: copy before handing them on)."""
    dim, features = params.dim, params.features
    w1, w2 = params.w1.T, params.w2.T  # (D, F) -> (F, D); (F, F) -> (F, F) transposed
    assert w1.shape == (features, dim), w1.shape
    assert w2.shape == (features, features), w2.shape
    return dict(zip(NAMES, (w1, params.b1, w2, params.b2), strict=True))  # biases (F,)


def to_canonical(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray) -> dict:
    """Arrays in this layout (parameters, or their gradients) as canonical arrays by name.

    Raises `ValueError` naming the array whose shape does not fit.
    """
    if w1.ndim != 2:
        raise ValueError(f"fc1.weight must be 2-D (F, D), got shape {w1.shape}")
    features, dim = w1.shape
    expected = {"fc1.weight": (features, dim), "fc1.bias": (features,)}
    expected |= {"fc2.weight": (features, features), "fc2.bias": (features,)}
    for name, array in zip(NAMES, (w1, b1, w2, b2), strict=True):
        if array.shape != expected[name]:
            raise ValueError(f"{name} must have shape {expected[name]}, got {array.shape}")
    return {"w1": w1.T, "b1": b1, "w2": w2.T, "b2": b2}  # (F, D) -> (D, F); (F, F) transposed


def canonical_arrays(
    state: Mapping[str, Any], to_numpy: Callable[[Any], np.ndarray]
) -> dict[str, np.ndarray]:
    """A framework's arrays in this layout by name (parameters or their gradients), each made
    numpy by `to_numpy`, as canonical arrays by name."""
    return to_canonical(*(to_numpy(state[name]) for name in NAMES))


def to_params(state: Mapping[str, Any], to_numpy: Callable[[Any], np.ndarray]) -> Params:
    """A framework's parameters in this layout by name as canonical params."""
    return Params(**canonical_arrays(state, to_numpy))


def to_grads(grads: Sequence[Any], dx: Any, to_numpy: Callable[[Any], np.ndarray]) -> Grads:
    """A framework's gradients in this layout, in `NAMES` order, and x's, as canonical `Grads`."""
    return Grads(**canonical_arrays(dict(zip(NAMES, grads, strict=True)), to_numpy), x=to_numpy(dx))
