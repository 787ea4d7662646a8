"""jax's threefry2x32 PRNG in numpy: keys, `fold_in` and random bits. Numpy only.

As `jax/_src/random/threefry2x32.py` computes them, in jax's default
*partitionable* mode (one 64-bit counter per element, its row-major index):

- `prng_key(seed)`: `jax.random.PRNGKey(seed)`, `(0, seed mod 2**32)`.
- `fold_in(key, data)`: `jax.random.fold_in`.
- `random_bits(key, shape)`: `jax.random.bits`, the two output words xor-ed.
- `threefry2x32(key0, key1, x0, x1)`: the hash itself, vectorised.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ...contract import check_seed

MASK32 = 0xFFFFFFFF

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KS_PARITY = 0x1BD11BDA


def threefry2x32(key0: Any, key1: Any, x0: Any, x1: Any) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds (jax's `threefry2x32_p`), vectorised over the counters.

    **Arguments:**

    - `key0`, `key1`: the two key words: uint32 scalars, or arrays that
      broadcast against the counters (one key per element is fine).
    - `x0`, `x1`: the two counter words, uint32 arrays.

    **Returns:** the two output words, uint32 arrays of the broadcast shape.
    """
    k0, k1 = np.asarray(key0, np.uint32), np.asarray(key1, np.uint32)
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(_KS_PARITY))
    shape = np.broadcast_shapes(np.shape(x0), np.shape(x1), k0.shape, k1.shape)
    # Fresh arrays, so that every round below can work in place.
    y0, y1 = np.empty(shape, np.uint32), np.empty(shape, np.uint32)
    np.add(np.asarray(x0, np.uint32), ks[0], out=y0)
    np.add(np.asarray(x1, np.uint32), ks[1], out=y1)
    spill = np.empty(shape, np.uint32)
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            y0 += y1
            np.left_shift(y1, r, out=spill)  # y1 = rotate_left(y1, r) ^ y0
            y1 >>= 32 - r
            y1 |= spill
            y1 ^= y0
        # Key injection. uint32 arrays wrap around silently, as XLA's do.
        y0 += ks[(block + 1) % 3]
        y1 += np.add(ks[(block + 2) % 3], np.uint32(block + 1), dtype=np.uint32)
    return y0, y1


def _threefry2x32_int(k0: int, k1: int, x0: int, x1: int) -> tuple[int, int]:
    # The same hash on Python ints, for one key: microseconds, not 110 numpy calls.
    ks = (k0, k1, k0 ^ k1 ^ _KS_PARITY)
    x0, x1 = (x0 + k0) & MASK32, (x1 + k1) & MASK32
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x0 = (x0 + x1) & MASK32
            x1 = (((x1 << r) & MASK32) | (x1 >> (32 - r))) ^ x0
        x0 = (x0 + ks[(block + 1) % 3]) & MASK32
        x1 = (x1 + ks[(block + 2) % 3] + block + 1) & MASK32
    return x0, x1


def prng_key(seed: Any) -> np.ndarray:
    """`jax.random.PRNGKey(seed)`'s key data, `(0, seed mod 2**32)` as uint32.

    In jax's default 32-bit mode the seed becomes an int32 (its low 32 bits
    kept), and `threefry_seed` takes the high key word as `seed >> 32`, which
    is 0 for a 32-bit value. So seeds `2**32` apart give the same key. The
    seed is validated by `contract.check_seed` (0 <= seed <= 2**63 - 1).
    """
    return np.array([0, check_seed(seed) & MASK32], dtype=np.uint32)


def fold_in(key: Any, data: int) -> np.ndarray:
    """`jax.random.fold_in(key, data)`: the threefry hash of the counter pair `(0, data)`."""
    data = operator.index(data)
    if not 0 <= data <= MASK32:
        raise ValueError(f"fold_in data must be a uint32, got {data}")
    k0, k1 = (int(k) for k in np.asarray(key, np.uint32))
    return np.array(_threefry2x32_int(k0, k1, 0, data), dtype=np.uint32)


def _counters(size: int) -> tuple[Any, np.ndarray]:
    # jax's iota_2x32_shape: each element's row-major index as a 64-bit
    # counter, split into (high, low) uint32 words. The high word is 0 for
    # any array that fits in memory; a scalar 0 then broadcasts.
    if size <= 2**32:
        return np.uint32(0), np.arange(size, dtype=np.uint32)
    index = np.arange(size, dtype=np.uint64)
    return (index >> np.uint64(32)).astype(np.uint32), index.astype(np.uint32)


def random_bits(key: Any, shape: tuple[int, ...]) -> np.ndarray:
    """`jax.random.bits(key, shape)` (uint32), in jax's default partitionable mode."""
    key = np.asarray(key, np.uint32)
    high, low = _counters(math.prod(shape))
    y0, y1 = threefry2x32(key[0], key[1], high, low)
    return (y0 ^ y1).reshape(shape)
