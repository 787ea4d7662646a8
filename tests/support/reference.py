"""A float64 numpy MLP, written out by hand: the reference the tests compare against."""

from __future__ import annotations

import numpy as np

from implementations.contract import Params


def forward(params: Params, x: np.ndarray) -> np.ndarray:
    """`relu(x @ w1 + b1) @ w2 + b2` in float64. (D,) -> (F,)"""
    w1, b1, w2, b2 = (np.asarray(p, np.float64) for p in params.as_dict().values())
    h = np.asarray(x, np.float64) @ w1 + b1
    return np.maximum(h, 0.0) @ w2 + b2


def vjp(params: Params, x: np.ndarray, cotangent: np.ndarray) -> dict[str, np.ndarray]:
    """Backpropagation by hand in float64: gradients for w1, b1, w2, b2 and x."""
    w1, b1, w2, _ = (np.asarray(p, np.float64) for p in params.as_dict().values())
    x = np.asarray(x, np.float64)
    c = np.asarray(cotangent, np.float64)
    h = x @ w1 + b1
    a = np.maximum(h, 0.0)
    g_h = (w2 @ c) * (h > 0)  # relu'(0) = 0, as in JAX and torch
    return {"w1": np.outer(x, g_h), "b1": g_h, "w2": np.outer(a, c), "b2": c, "x": w1 @ g_h}


def random_params(rng: np.random.Generator, dim: int, features: int) -> Params:
    """General parameters: random kernels and non-zero biases (the init's biases are all zero)."""
    return Params(
        w1=rng.normal(size=(dim, features)) / np.sqrt(dim),
        b1=rng.normal(size=features),
        w2=rng.normal(size=(features, features)) / np.sqrt(features),
        b2=rng.normal(size=features),
    )
