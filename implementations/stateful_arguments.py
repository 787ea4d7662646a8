"""The second exercise's arguments, checked once for every port (numpy only).

`checked(seed, x, features, rate, cotangent)` is what every `state_step` runs first: each
bad argument gets a one-line error naming it, and x and the cotangent come back as float32
copies (the caller's arrays are never touched). `initial(params)` is the block's starting
arrays by canonical name: the first exercise's parameters (`Params`, drawn by the port as
today), then BatchNorm's scale ones, bias zeros, mean zeros and variance ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .contract import check_features, check_seed, check_sizes
from .stateful import check_batch, check_rate


def checked(seed: Any, x: Any, features: Any, rate: Any, cotangent: Any):
    """`(seed, x, features, rate, cotangent)` checked: x `(B, D)` and the cotangent `(B, F)`
    as float32 numpy copies."""
    seed, features, rate, x = (
        check_seed(seed),
        check_features(features),
        check_rate(rate),
        check_batch(x),
    )
    check_sizes(x.shape[1], features)
    cotangent = np.array(cotangent, dtype=np.float32, copy=True)
    if cotangent.shape != (x.shape[0], features):
        raise ValueError(
            f"cotangent must have shape {(x.shape[0], features)}, got {cotangent.shape}"
        )
    return seed, x, features, rate, cotangent


def initial(params: Any) -> dict[str, np.ndarray]:
    """The block's arrays by canonical name from the first exercise's `params` (w1, b1, w2,
    b2), with Flax's BatchNorm start: gamma ones, beta zeros, mean zeros, var ones."""
    features = np.asarray(params.b1).shape[0]
    ones, zeros = np.ones(features, np.float32), np.zeros(features, np.float32)
    return {
        "w1": np.asarray(params.w1, np.float32), "b1": np.asarray(params.b1, np.float32),
        "gamma": ones, "beta": zeros.copy(), "w2": np.asarray(params.w2, np.float32),
        "b2": np.asarray(params.b2, np.float32), "mean": zeros, "var": ones.copy(),
    }  # fmt: skip
