"""Measure the Equinox port against the canonical Flax port: init ulps, then call times.

**ulp:** the largest difference, in units in the last place, between
`EquinoxJax().init_params` and `FlaxLinen().init_params`, over many seeds
(small, random 32-bit, >= 2**32, >= 2**40, up to 2**63 - 1) and many shapes.

**speed:** `nn_checkpoint_forward` at (D, F) = (16, 16) and (256, 256), both
ports in one process: the first call (trace and compile; JAX itself warmed up
beforehand) and the warm per-call median, with a new seed on every call.
The ports take turns call by call, so machine noise falls on both alike.

Run: `python benchmarks/equinox_init_ulp.py [ulp|speed|all] [--seeds N] [--calls N]`.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from implementations.stacks.jax.equinox_jax import EquinoxJax
from implementations.stacks.jax.equinox_jax import nn_checkpoint_forward as eqx_forward
from implementations.stacks.jax.flax_linen import FlaxLinen
from implementations.stacks.jax.flax_linen import nn_checkpoint_forward as flax_forward

SHAPES = [
    (1, 1), (1, 7), (2, 3), (3, 4), (5, 1), (7, 33), (16, 16), (17, 5),
    (31, 64), (64, 31), (100, 3), (128, 128), (255, 257), (256, 256), (513, 40), (1000, 8),
]  # fmt: skip


def seeds(count: int) -> list[int]:
    """`count` seeds: edges, then equal shares of small, 32-bit, >= 2**32, >= 2**40, near 2**63."""
    rng = np.random.default_rng(20240607)
    edges = [
        0,
        1,
        2**31 - 1,
        2**31,
        2**32 - 1,
        2**32,
        2**32 + 1,
        2**40,
        2**62,
        2**63 - 2,
        2**63 - 1,
    ]
    share = max(1, (count - len(edges)) // 5)
    draws = [
        rng.integers(0, 1000, share),
        rng.integers(0, 2**32, share, dtype=np.uint64),
        rng.integers(2**32, 2**40, share, dtype=np.uint64),
        rng.integers(2**40, 2**63 - 1, share, dtype=np.uint64),
        2**63 - 1 - rng.integers(0, 2**20, share, dtype=np.uint64),
    ]
    found = list(dict.fromkeys(edges + [int(s) for draw in draws for s in draw]))
    return found[:count] if len(found) >= count else found


def ulp_distance(a: np.ndarray, b: np.ndarray) -> int:
    """The largest ulp distance between two float32 arrays (0 == +0 == -0)."""

    def ordered(v):  # float32 bits as integers in the order of the floats
        bits = v.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, np.int64(-(2**31)) - bits, bits)

    return int(np.max(np.abs(ordered(a) - ordered(b)), initial=0))


def measure_ulp(n_seeds: int) -> None:
    port, canonical = EquinoxJax(), FlaxLinen()
    worst, where, pairs, exact = 0, None, 0, 0
    seed_list = seeds(n_seeds)
    start = time.perf_counter()
    # Each seed runs on a few shapes (rotating), every edge seed on all of them.
    for i, seed in enumerate(seed_list):
        shapes = SHAPES if i < 11 else [SHAPES[(i + k) % len(SHAPES)] for k in range(4)]
        for dim, features in shapes:
            ours, theirs = (
                port.init_params(seed, dim, features),
                canonical.init_params(seed, dim, features),
            )
            ulps = max(
                ulp_distance(getattr(ours, n), getattr(theirs, n)) for n in ("w1", "b1", "w2", "b2")
            )
            pairs += 1
            exact += ulps == 0
            if ulps > worst or where is None:
                worst, where = max(worst, ulps), (seed, dim, features)
    elapsed = time.perf_counter() - start
    big = {bound: sum(s >= 2**bound for s in seed_list) for bound in (32, 40)}
    near_max = sum(s >= 2**63 - 2**20 for s in seed_list)
    print(f"init ulp vs Flax: {len(seed_list)} seeds, {len(SHAPES)} shapes, {pairs} pairs")
    print(f"  seeds >= 2**32: {big[32]}, >= 2**40: {big[40]}, >= 2**63 - 2**20: {near_max}")
    print(f"  max ulp difference: {worst} (first at seed, D, F = {where})")
    print(f"  bit-exact pairs: {exact}/{pairs}")
    print(f"  ({elapsed:.0f} s)")


def measure_speed(calls: int) -> None:
    jnp.ones(3).block_until_ready()  # JAX's own start-up is nobody's first call
    jax.jit(lambda v: v + 1)(jnp.ones(3)).block_until_ready()
    ports = {"equinox_jax": eqx_forward, "flax_linen": flax_forward}
    print(f"nn_checkpoint_forward, {calls} warm calls each, new seed per call (ms)")
    print(f"{'D=F':>5} {'port':<12} {'first call':>10} {'warm median':>12} {'p10':>7} {'p90':>7}")
    for size in (16, 256):
        x = jnp.asarray(np.random.default_rng(size).standard_normal(size), jnp.float32)
        # Alternate which port goes first, so neither always pays shared warm-up.
        order = list(ports) if size == 16 else list(reversed(ports))
        first = {}
        for name in order:
            t0 = time.perf_counter()
            ports[name](0, x, size).block_until_ready()
            first[name] = time.perf_counter() - t0
        times = {name: [] for name in ports}
        seed = itertools.count(1)
        for _ in range(calls):
            for name in order:
                s = next(seed)
                t0 = time.perf_counter()
                ports[name](s, x, size).block_until_ready()
                times[name].append(time.perf_counter() - t0)
        for name in ports:
            warm = sorted(times[name])
            median, p10, p90 = (
                statistics.median(warm),
                warm[len(warm) // 10],
                warm[9 * len(warm) // 10],
            )
            print(
                f"{size:>5} {name:<12} {first[name] * 1e3:>10.1f} {median * 1e3:>12.3f}"
                f" {p10 * 1e3:>7.3f} {p90 * 1e3:>7.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="all", choices=("ulp", "speed", "all"))
    parser.add_argument("--seeds", type=int, default=1200)
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    if args.what in ("speed", "all"):
        measure_speed(args.calls)
    if args.what in ("ulp", "all"):
        measure_ulp(args.seeds)


if __name__ == "__main__":
    main()
