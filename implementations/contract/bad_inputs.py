"""The catalogue of bad inputs that the suite feeds every port (property (g)). Numpy only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class BadInput:
    """One bad call of `nn_checkpoint_forward` (or of `init_params`), and the error every port
    must raise.

    `x` is a factory taking the port's `from_numpy`, so that the bad x
    can arrive both as numpy and as the framework's own array. `max_bytes`,
    where set, is the byte budget (`REMAT_MAX_BYTES`) for the call, so that
    an overrun is an overrun on every machine. `call` is `"init_params"` for
    a bad `init_params(seed, dim, features)`: the process protocol requires
    its checks, so (g) sends these to ports that say they check
    (`checks_init_inputs`: every process port).
    """

    label: str
    argument: str
    error: type[Exception]
    seed: Any = 0
    features: Any = 3
    x: Callable[[Callable[[np.ndarray], Any]], Any] = lambda native: native(
        np.array([1.0, -2.0], np.float32)
    )
    max_bytes: int | None = None
    call: str = "nn_checkpoint_forward"
    dim: Any = 2


def _raw(value: Any) -> Callable[[Callable[[np.ndarray], Any]], Any]:
    return lambda native: value


def _native(array: np.ndarray) -> Callable[[Callable[[np.ndarray], Any]], Any]:
    return lambda native: native(array)


def _huge(dim: int) -> Callable[[Callable[[np.ndarray], Any]], Any]:
    # A float32 (D,) numpy array with no data: every element is one stored
    # zero (stride 0), so D = 2**31 costs 4 bytes. It is numpy in both forms:
    # a framework's copy of it would allocate D elements.
    return lambda native: np.broadcast_to(np.zeros((), np.float32), (dim,))


BAD_INPUTS: tuple[BadInput, ...] = (
    BadInput("seed is True", "seed", ValueError, seed=True),
    BadInput("seed is numpy bool", "seed", ValueError, seed=np.bool_(False)),
    BadInput("seed is 1.5", "seed", ValueError, seed=1.5),
    BadInput("seed is NaN", "seed", ValueError, seed=float("nan")),
    BadInput("seed is inf", "seed", ValueError, seed=float("inf")),
    BadInput("seed is -inf", "seed", ValueError, seed=float("-inf")),
    BadInput("seed is -1", "seed", ValueError, seed=-1),
    BadInput("seed is -1.0", "seed", ValueError, seed=-1.0),
    BadInput("seed is 2**63", "seed", ValueError, seed=2**63),
    BadInput("seed is a string", "seed", TypeError, seed="3"),
    BadInput("seed is None", "seed", TypeError, seed=None),
    BadInput("seed is a (1,) array", "seed", TypeError, seed=np.array([3])),
    BadInput("features is True", "features", ValueError, features=True),
    BadInput("features is 2.5", "features", ValueError, features=2.5),
    BadInput("features is NaN", "features", ValueError, features=float("nan")),
    BadInput("features is inf", "features", ValueError, features=float("inf")),
    BadInput("features is 0", "features", ValueError, features=0),
    BadInput("features is -3", "features", ValueError, features=-3),
    BadInput("features is numpy 0.5", "features", ValueError, features=np.float32(0.5)),
    # Sizes: past an int32 element count (XLA aborts the interpreter), or the byte budget.
    BadInput("features is 2**31", "features", ValueError, features=2**31),
    BadInput("features is 46341: (F, F) past 2**31", "features", ValueError, features=46341),
    BadInput(
        "features is 10**7, D is 10**4", "features", ValueError, features=10**7, x=_huge(10**4)
    ),
    BadInput("x has 2**31 elements", "x", ValueError, x=_huge(2**31)),
    BadInput("x has 2**40 elements", "x", ValueError, x=_huge(2**40)),
    BadInput(
        "D * F past 2**31", "x", ValueError, features=46340, x=_native(np.ones(46342, np.float32))
    ),
    BadInput(
        "parameters past the byte budget",
        "features",
        ValueError,
        features=256,
        x=_native(np.ones(256, np.float32)),
        max_bytes=2**16,  # they need 526 kB
    ),
    BadInput(
        "activations past the byte budget",
        "x",
        ValueError,
        features=1,
        x=_native(np.ones(2**11, np.float32)),
        max_bytes=2**12,  # x alone is 8 kB
    ),
    BadInput("x is bool", "x", TypeError, x=_native(np.array([True, False]))),
    BadInput("x is complex", "x", TypeError, x=_native(np.array([1 + 2j, 3j], np.complex64))),
    BadInput("x is object", "x", TypeError, x=_raw(np.array([1.0, None], dtype=object))),
    BadInput("x is a list of strings", "x", TypeError, x=_raw(["a", "b"])),
    BadInput("x is 0-d", "x", ValueError, x=_native(np.array(1.0, np.float32))),
    BadInput("x is 2-d", "x", ValueError, x=_native(np.ones((2, 3), np.float32))),
    BadInput("x is empty", "x", ValueError, x=_native(np.zeros((0,), np.float32))),
    BadInput("x holds NaN", "x", ValueError, x=_native(np.array([1.0, np.nan], np.float32))),
    BadInput("x holds inf", "x", ValueError, x=_native(np.array([np.inf, 1.0], np.float32))),
    BadInput("x holds -inf", "x", ValueError, x=_raw([1.0, float("-inf")])),
    BadInput("x overflows float32", "x", ValueError, x=_raw(np.array([1e39, 0.0]))),
    BadInput("x is ragged", "x", TypeError, x=_raw([[1.0], [1.0, 2.0]])),
)


def _init(label: str, argument: str, error: type[Exception], **arguments: Any) -> BadInput:
    return BadInput(f"init_params: {label}", argument, error, call="init_params", **arguments)


#: Bad calls of `init_params`, for ports that check its inputs (process ports: the protocol
#: requires it). On the wire a non-decimal integer is a ValueError, null a TypeError.
BAD_INIT_INPUTS: tuple[BadInput, ...] = (
    _init("seed is -1", "seed", ValueError, seed=-1),
    _init("seed is 2**63", "seed", ValueError, seed=2**63),
    _init("seed is True", "seed", ValueError, seed=True),
    _init("seed is 1.5", "seed", ValueError, seed=1.5),
    _init("seed is None", "seed", TypeError, seed=None),
    _init("features is 0", "features", ValueError, features=0),
    _init("features is 46341", "features", ValueError, features=46341),
    _init("features is NaN", "features", ValueError, features=float("nan")),
    _init("dim is 0", "dim", ValueError, dim=0),
    _init("dim is -1", "dim", ValueError, dim=-1),
    _init("dim is True", "dim", ValueError, dim=True),
    _init("dim is 2.5", "dim", ValueError, dim=2.5),
    _init("dim is None", "dim", TypeError, dim=None),
    _init("dim is a (1,) array", "dim", TypeError, dim=np.array([3])),
    _init("dim is 2**31", "dim", ValueError, dim=2**31),
    _init("D * F past 2**31", "dim", ValueError, dim=46342, features=46340),
    _init(
        "parameters past the byte budget",
        "features",
        ValueError,
        dim=256,
        features=256,
        max_bytes=2**16,
    ),
)
