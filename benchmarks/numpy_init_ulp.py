"""How far the numpy canonical init is from Flax's, in float32 ulps.

Run: `python benchmarks/numpy_init_ulp.py [--seeds 1000]` (needs jax and flax).

1. **Every mantissa.** The truncated normal of an element depends only on
   the 23 bits it draws. A custom jax PRNG whose "random" bits are
   `index << 9` drives jax's own `truncated_normal` (and `lecun_normal`,
   jitted, for several fan-ins) through all 2**23 of them; the numpy values
   are compared with each.
2. **Which step matters.** The same sweep with the numpy FMAs replaced by a
   separate multiply and add (what XLA would do without FMA hardware):
   everywhere, and everywhere except `uniform`.
3. **Seeds and shapes.** `canonical_params` against `FlaxLinen().init_params`
   for >= 1000 seeds (0, small, near 2**31, 2**32 +- k, >= 2**40, 2**63 - 1,
   random) over shapes with D and F from 1 to 300.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.extend.random as jax_random_ext
import jax.numpy as jnp
import numpy as np

from conformance.checking.tolerance import ulp_distance
from implementations.stacks.jax.flax_linen import FlaxLinen
from implementations.stacks.numpy import init as ci
from implementations.stacks.numpy import sampling, xla_math

SHAPES = [
    (1, 1), (1, 7), (2, 3), (3, 1), (4, 4), (5, 16), (7, 33), (8, 8), (12, 100), (16, 16),
    (17, 31), (31, 17), (32, 64), (50, 3), (64, 128), (100, 100), (127, 129), (128, 256),
    (200, 50), (256, 256), (300, 7), (3, 300), (255, 255), (300, 300),
]  # fmt: skip

SPECIAL_SEEDS = [
    0, 1, 2, 3, 42, 1234, 2**31 - 2, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 2, 2**32 - 1,
    2**32, 2**32 + 1, 2**32 + 7, 2**33 - 1, 2**40, 2**40 + 5, 2**52 + 3, 2**62, 2**63 - 2,
    2**63 - 1,
]  # fmt: skip


def iota_truncated_normal() -> np.ndarray:
    """jax's truncated_normal(-2, 2) at every mantissa, via a PRNG that returns `index << 9`."""
    impl = _iota_impl()
    return np.asarray(
        jax.random.truncated_normal(jax.random.key(0, impl=impl), -2.0, 2.0, (2**23,))
    )


def _iota_impl():
    def iota_bits(key, bit_width, shape):
        n = int(np.prod(shape))
        return (jax.lax.iota(jnp.uint32, n) << jnp.uint32(9)).reshape(shape)

    return jax_random_ext.define_prng_impl(
        key_shape=(1,),
        seed=lambda seed: jnp.zeros((1,), jnp.uint32),
        split=lambda key, shape: jnp.zeros((*shape, 1), jnp.uint32),
        random_bits=iota_bits,
        fold_in=lambda key, data: key,
        name="iota_bits",
    )


def numpy_truncated_normal_by_mantissa() -> np.ndarray:
    mantissa = np.arange(2**23, dtype=np.uint32)
    return ci._truncated_normal_of_mantissa(mantissa, -2.0, 2.0)


def every_mantissa() -> None:
    print("1. every mantissa (2**23 values)")
    start = time.perf_counter()
    truth = iota_truncated_normal()
    table = ci._truncated_normal_of_bits(np.arange(2**23, dtype=np.uint32) << 9, -2.0, 2.0)
    direct = numpy_truncated_normal_by_mantissa()
    print(f"   truncated_normal, table:    max {ulp_distance(table, truth).max()} ulp")
    print(f"   truncated_normal, direct:   max {ulp_distance(direct, truth).max()} ulp")
    odd = np.array_equal(direct[1:], -direct[1:][::-1])
    print(f"   odd about the middle mantissa (the half table's premise): {odd}")
    init = jax.nn.initializers.lecun_normal()
    for fan_in in (1, 3, 16, 256, 1000):
        shape = (fan_in, 2**23 // fan_in)
        n = shape[0] * shape[1]
        key = jax.random.key(0, impl=_iota_impl())
        expected = np.asarray(jax.jit(lambda k, shape=shape: init(k, shape, jnp.float32))(key))
        ours = direct[:n] * ci.lecun_stddev(float(fan_in))
        distance = ulp_distance(ours, expected.ravel()).max()
        print(f"   lecun_normal fan_in={fan_in:5d}: max {distance} ulp")
    print(f"   ({time.perf_counter() - start:.1f} s)")
    which_step_matters(truth)


def which_step_matters(truth: np.ndarray) -> None:
    print("2. the same sweep without fused multiply-adds")
    # Replaced where they are looked up: `_fma` in the float32 maths and in the sampling
    # (`_scale_unit`, uniform's multiply-add, calls it there), `_scale_unit` in the sampling.
    fused, fused_scale = xla_math._fma, sampling._scale_unit

    def unfused(a, b, c):
        return (a * np.float32(b) + np.float32(c)).astype(np.float32)

    try:
        xla_math._fma = sampling._fma = unfused
        everywhere = numpy_truncated_normal_by_mantissa()

        def scale_fused(unit, minval, maxval):
            return np.maximum(minval, fused(unit, maxval - minval, minval))

        sampling._scale_unit = scale_fused
        except_uniform = numpy_truncated_normal_by_mantissa()
    finally:
        xla_math._fma = sampling._fma = fused
        sampling._scale_unit = fused_scale
    for label, values in [("no FMA anywhere", everywhere), ("FMA in uniform only", except_uniform)]:
        distance = ulp_distance(values, truth)
        share = np.mean(distance > 0)
        print(f"   {label:22s}: max {distance.max():7d} ulp, {share:6.1%} of mantissas differ")


def seeds_and_shapes(n_seeds: int) -> None:
    print(f"3. canonical_params vs FlaxLinen().init_params, {n_seeds}+ seeds")
    rng = np.random.default_rng(0)
    random_seeds = [int(s) for s in rng.integers(0, 2**63 - 1, n_seeds, dtype=np.int64)]
    flax = FlaxLinen()
    worst, count, arrays, start = 0, 0, 0, time.perf_counter()
    plan = [(seed, shape) for seed in SPECIAL_SEEDS for shape in SHAPES]
    plan += [(seed, SHAPES[i % len(SHAPES)]) for i, seed in enumerate(random_seeds)]
    for seed, (dim, features) in plan:
        ours, theirs = (
            ci.canonical_params(seed, dim, features),
            flax.init_params(seed, dim, features),
        )
        for name in ("w1", "b1", "w2", "b2"):
            distance = ulp_distance(getattr(ours, name), getattr(theirs, name))
            worst = max(worst, int(distance.max()))
            arrays += 1
        count += 1
    seeds = len(set(SPECIAL_SEEDS) | set(random_seeds))
    print(
        f"   {count} inits, {seeds} distinct seeds, {len(SHAPES)} shapes, {arrays} arrays: "
        f"max {worst} ulp ({time.perf_counter() - start:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seeds", type=int, default=1000, help="random seeds, on top of the special ones"
    )
    args = parser.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}")
    every_mantissa()
    seeds_and_shapes(args.seeds)


if __name__ == "__main__":
    main()
