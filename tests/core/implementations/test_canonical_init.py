"""The numpy canonical init, checked step by step against jax and as a whole against Flax.

Expected values come from jax and Flax themselves, from published test
vectors, or from exact (rational / float64) arithmetic; never from the code
under test. Tests that need jax or Flax skip without them.

XLA:CPU fuses a multiply and a dependent add into one FMA on hosts that have
the instruction; `_canonical_init.numpy_init` reproduces that, and the tests then ask
for bit equality. On a host where XLA does not fuse (probed below), they
only ask for the issue's bound: 2 ulp.
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from conformance.checking.tolerance import ulp_distance
from implementations.contract import BAD_INPUTS, Params
from implementations.stacks.numpy import init as ci
from implementations.stacks.numpy import sampling, tables, xla_math
from implementations.stacks.numpy.keys import dense_kernel_fold_value

try:
    import jax
    import jax.extend.random as jax_random_ext
    import jax.numpy as jnp
except ImportError:  # the jax-free half of this file still runs
    jax = jnp = jax_random_ext = None

needs_jax = pytest.mark.skipif(jax is None, reason="jax is not installed")

SEEDS = [0, 1, 7, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 3, 2**40 + 11, 2**63 - 1]


def _xla_fuses_multiply_add() -> bool:
    # (1 + 2**-12)**2 - 1 is 2**-11 + 2**-24 with one rounding, 2**-11 with two.
    a = np.float32(1 + 2**-12)
    return float(jax.jit(lambda a, b, c: a * b + c)(a, a, np.float32(-1))) != 2**-11


@pytest.fixture(scope="module")
def max_ulps() -> int:
    """The ulp distance allowed from XLA: 0 where XLA fuses multiply-adds, else the issue's 2."""
    if jax is None:
        pytest.skip("jax is not installed")
    return 0 if _xla_fuses_multiply_add() else 2


def _assert_ulps(actual, expected, limit, what=""):
    actual, expected = np.asarray(actual, np.float32), np.asarray(expected, np.float32)
    assert actual.shape == expected.shape, what
    assert actual.dtype == np.float32, what
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(actual), nan, err_msg=f"{what}: NaN positions")
    distance = ulp_distance(actual[~nan], expected[~nan])
    worst = int(distance.max(initial=0))
    assert worst <= limit, f"{what}: {worst} ulp apart (allowed {limit}), at {np.argmax(distance)}"


# ---------------------------------------------------------------------------
# threefry2x32, keys and bits
# ---------------------------------------------------------------------------

# Random123's known answers for Threefry-2x32 with 20 rounds: (key, counter, output).
THREEFRY_KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize(("key", "counter", "expected"), THREEFRY_KAT)
def test_threefry_known_answers(key, counter, expected):
    y0, y1 = ci.threefry2x32(key[0], key[1], np.uint32([counter[0]]), np.uint32([counter[1]]))
    assert (int(y0[0]), int(y1[0])) == expected
    assert ci._threefry2x32_int(*key, *counter) == expected


def test_threefry_vectorises_elementwise_with_per_element_keys():
    rng = np.random.default_rng(0)
    k0, k1, x0, x1 = (
        rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(4)
    )
    y0, y1 = ci.threefry2x32(k0, k1, x0, x1)
    for i in range(64):
        assert (int(y0[i]), int(y1[i])) == ci._threefry2x32_int(
            int(k0[i]), int(k1[i]), int(x0[i]), int(x1[i])
        )


@needs_jax
def test_threefry_matches_jax():
    rng = np.random.default_rng(1)
    count = rng.integers(0, 2**32, 1000, dtype=np.uint64).astype(np.uint32)
    key = (np.uint32(0x9E3779B9), np.uint32(0x7F4A7C15))
    expected = np.asarray(jax_random_ext.threefry_2x32(jnp.asarray(key), jnp.asarray(count)))
    y0, y1 = ci.threefry2x32(key[0], key[1], count[:500], count[500:])  # jax halves the counts
    np.testing.assert_array_equal(np.concatenate([y0, y1]), expected)


@needs_jax
@pytest.mark.parametrize("seed", SEEDS)
def test_prng_key_matches_jax(seed):
    expected = np.asarray(jax.random.key_data(jax.random.PRNGKey(seed)))
    np.testing.assert_array_equal(ci.prng_key(seed), expected)
    assert ci.prng_key(seed).dtype == np.uint32


def test_prng_key_keeps_the_low_32_bits_and_refuses_bad_seeds():
    np.testing.assert_array_equal(ci.prng_key(2**40 + 9), [0, 9])
    np.testing.assert_array_equal(ci.prng_key(7.0), [0, 7])
    for bad in BAD_INPUTS:
        if bad.argument == "seed":
            with pytest.raises(bad.error, match="seed"):
                ci.prng_key(bad.seed)


@needs_jax
@pytest.mark.parametrize("data", [0, 1, 2**31, 2**32 - 1, dense_kernel_fold_value(0)])
@pytest.mark.parametrize("seed", [0, 42, 2**32 - 1])
def test_fold_in_matches_jax(seed, data):
    key = jax.random.PRNGKey(seed)
    expected = np.asarray(jax.random.fold_in(key, data))
    np.testing.assert_array_equal(ci.fold_in(np.asarray(key), data), expected)


def test_fold_in_takes_uint32_data_only():
    with pytest.raises(ValueError, match="uint32"):
        ci.fold_in(ci.prng_key(0), 2**32)
    with pytest.raises(TypeError):
        ci.fold_in(ci.prng_key(0), 1.5)


@needs_jax
@pytest.mark.parametrize("shape", [(5,), (3, 7), (256, 256)])
def test_random_bits_match_jax(shape):
    key = jax.random.PRNGKey(1234)
    expected = np.asarray(jax.random.bits(key, shape))
    np.testing.assert_array_equal(ci.random_bits(np.asarray(key), shape), expected)


@needs_jax
@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("seed", [0, 2**33 + 1])
def test_dense_kernel_key_is_flax_fold_of_prngkey(seed, layer):
    root = jax.random.PRNGKey(seed)
    expected = np.asarray(jax.random.fold_in(root, dense_kernel_fold_value(layer)))
    np.testing.assert_array_equal(ci.dense_kernel_key(seed, layer), expected)


# ---------------------------------------------------------------------------
# Float32 steps
# ---------------------------------------------------------------------------


def _correctly_rounded(exact: Fraction) -> np.float32:
    # The float32 nearest to an exact rational, ties to even.
    guess = np.float32(float(exact))
    candidates = [
        np.nextafter(guess, np.float32(-np.inf)),
        guess,
        np.nextafter(guess, np.float32(np.inf)),
    ]
    distances = [abs(Fraction(float(c)) - exact) for c in candidates]
    best = min(distances)
    ties = [c for c, d in zip(candidates, distances, strict=True) if d == best]
    return min(ties, key=lambda c: int(np.float32(c).view(np.uint32)) & 1)


def test_fma_rounds_once_like_exact_arithmetic():
    rng = np.random.default_rng(2)
    a = rng.normal(size=500).astype(np.float32)
    b = rng.normal(size=500).astype(np.float32)
    c = (rng.normal(size=500) * 10.0 ** rng.integers(-8, 8, size=500)).astype(np.float32)
    # Cases where two roundings go wrong: a*b + c exactly halfway after a first
    # rounding to float64 (c far below the last bit), and products that cancel.
    one_and = np.float32(1 + 2**-12)
    a = np.concatenate([a, [one_and, one_and, np.float32(1 + 2**-23), np.float32(3.0)]])
    b = np.concatenate([b, [one_and, -one_and, np.float32(1 + 2**-23), np.float32(1 / 3)]])
    c = np.concatenate([c, [np.float32(-1), np.float32(1), np.float32(2**-70), np.float32(-1)]])
    out = ci.fma_f32(a, b, c)
    for i in range(len(a)):
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        assert out[i] == _correctly_rounded(exact), (a[i], b[i], c[i])


def test_fma_double_rounding_case_is_fixed():
    # (1 + 2**-12)**2 = 1 + 2**-11 + 2**-24 is exactly halfway between two
    # float32s. Adding 2**-60 moves the exact sum above the halfway point, but
    # its float64 rounding lands back on it, and a second rounding (to even)
    # would then go down. One rounding goes up.
    a = np.float32(1 + 2**-12)
    c = np.float32(2**-60)
    assert ci.fma_f32(a, a, c) == np.float32(1 + 2**-11 + 2**-23)
    assert ci.fma_f32(a, a, -c) == np.float32(1 + 2**-11)


def _erf_inv_float64(y: float) -> float:
    # Newton on math.erf, from a bisection start: an independent reference.
    lo, hi = -6.0, 6.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    x = (lo + hi) / 2
    for _ in range(3):
        x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def test_erf_inv_is_close_to_the_true_inverse():
    # No jax needed: XLA's float32 approximation is within a few ulps of erfinv.
    x = np.float32([-0.999, -0.95, -0.5, -1e-3, 1e-6, 0.1, 0.6, 0.9, 0.99, 0.99999])
    expected = np.float32([_erf_inv_float64(float(v)) for v in x])
    assert ulp_distance(ci.erf_inv_f32(x), expected).max() <= 8
    special = ci.erf_inv_f32(np.float32([1, -1, 0, -0.0, 1.5, np.nan]))
    np.testing.assert_array_equal(special[:3], [np.inf, -np.inf, 0.0])
    np.testing.assert_array_equal(np.signbit(special[2:4]), [False, True])
    np.testing.assert_array_equal(np.isnan(special[4:]), [True, True])


def test_log_and_log1p_are_close_to_float64():
    z = np.float32(np.geomspace(1e-30, 1e30, 2001))
    assert ulp_distance(ci.log_f32(z), np.log(z.astype(np.float64))).max() <= 2
    y = np.float32(np.linspace(-0.999, 3.0, 2001))
    assert ulp_distance(ci.log1p_f32(y), np.log1p(y.astype(np.float64))).max() <= 2


def _erf_inv_inputs() -> np.ndarray:
    rng = np.random.default_rng(3)
    near_one = 1 - np.geomspace(1e-7, 1e-1, 300)
    return np.concatenate(
        [
            rng.uniform(-1, 1, 200_000),
            near_one,
            -near_one,
            np.geomspace(1e-38, 1e-2, 300),
            [0.0, -0.0, 1.0, -1.0, 1.5, -2.0, np.nan, 1e-45, -1e-40, 0.41421356, 0.6435942],
        ]
    ).astype(np.float32)


@needs_jax
def test_erf_inv_matches_xla(max_ulps):
    x = _erf_inv_inputs()
    expected = np.asarray(jax.jit(jax.lax.erf_inv)(x))
    _assert_ulps(ci.erf_inv_f32(x), expected, max_ulps, "erf_inv")


@needs_jax
def test_log1p_and_log_match_xla(max_ulps):
    y = -np.square(_erf_inv_inputs())  # what erf_inv feeds to log1p
    y = np.concatenate([y, np.float32(np.linspace(-0.9, 5.0, 10_001))])
    _assert_ulps(ci.log1p_f32(y), np.asarray(jax.jit(jnp.log1p)(y)), max_ulps, "log1p")
    z = np.float32(np.concatenate([np.geomspace(1e-37, 1e37, 20_001), [0.0, -1.0, np.inf]]))
    _assert_ulps(ci.log_f32(z), np.asarray(jax.jit(jnp.log)(z)), max_ulps, "log")


# ---------------------------------------------------------------------------
# Distributions
# ---------------------------------------------------------------------------


def test_bits_to_unit_float_uses_the_top_23_bits():
    bits = np.uint32([0, 0x1FF, 0x200, 0xFFFFFFFF, 0x80000000])
    expected = np.float32([0.0, 0.0, 2.0**-23, 1 - 2.0**-23, 0.5])
    np.testing.assert_array_equal(ci.bits_to_unit_float(bits), expected)


@needs_jax
@pytest.mark.parametrize(("minval", "maxval"), [(0.0, 1.0), (-1.0, 1.0), (-0.7, 1.3), (2.0, 2.5)])
def test_uniform_matches_jax(minval, maxval, max_ulps):
    key = jax.random.PRNGKey(99)
    expected = np.asarray(jax.random.uniform(key, (4000,), jnp.float32, minval, maxval))
    _assert_ulps(ci.uniform(np.asarray(key), (4000,), minval, maxval), expected, max_ulps)


@needs_jax
@pytest.mark.parametrize(("lower", "upper"), [(-2.0, 2.0), (-1.0, 3.0), (-0.5, 0.5)])
@pytest.mark.parametrize("shape", [(33, 17)])
def test_truncated_normal_matches_jax(lower, upper, shape, max_ulps):
    # Symmetric bounds go through the lookup table, the others element by element.
    key = jax.random.PRNGKey(5)
    expected = np.asarray(jax.random.truncated_normal(key, lower, upper, shape, jnp.float32))
    actual = ci.truncated_normal(np.asarray(key), lower, upper, shape)
    _assert_ulps(actual, expected, max_ulps, f"truncated_normal({lower}, {upper})")
    assert np.all((actual > lower) & (actual < upper))


@needs_jax
def test_truncated_normal_over_a_sweep_of_the_23_random_bits(max_ulps):
    # A custom jax PRNG whose "random" bits are the element index << 9 drives
    # jax's own truncated_normal through every 257th of the 2**23 mantissas,
    # the first, the middle and the last included.
    def iota_bits(key, bit_width, shape):
        n = math.prod(shape)
        return (jax.lax.iota(jnp.uint32, n) << jnp.uint32(9)).reshape(shape)

    impl = jax_random_ext.define_prng_impl(
        key_shape=(1,),
        seed=lambda seed: jnp.zeros((1,), jnp.uint32),
        split=lambda key, shape: jnp.zeros((*shape, 1), jnp.uint32),
        random_bits=iota_bits,
        fold_in=lambda key, data: key,
        name="iota_bits",
    )
    every = np.asarray(
        jax.random.truncated_normal(jax.random.key(0, impl=impl), -2.0, 2.0, (2**23,))
    )
    mantissa = np.concatenate([np.arange(0, 2**23, 257), [2**22 - 1, 2**22, 2**23 - 1]])
    actual = ci._truncated_normal_of_bits((mantissa << 9).astype(np.uint32), -2.0, 2.0)
    _assert_ulps(actual, every[mantissa], max_ulps, "truncated_normal by mantissa")


def test_lecun_stddev_is_float32_arithmetic():
    for fan_in in [1, 2, 3, 16, 100, 256, 1000]:
        variance = np.float32(1.0 / fan_in)
        expected = np.float32(np.sqrt(variance)) / np.float32(0.87962566103423978)
        assert ci.lecun_stddev(float(fan_in)) == expected
        assert abs(float(expected) - 1 / math.sqrt(fan_in) / 0.87962566103423978) < 1e-6


@needs_jax
@pytest.mark.parametrize("shape", [(3, 5), (4, 2, 6)])
def test_lecun_normal_matches_jax(shape, max_ulps):
    key = jax.random.PRNGKey(17)
    expected = np.asarray(jax.nn.initializers.lecun_normal()(key, shape, jnp.float32))
    _assert_ulps(ci.lecun_normal(np.asarray(key), shape), expected, max_ulps, "lecun_normal")


# ---------------------------------------------------------------------------
# The exercise's parameters
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("dim", "features"), [(1, 1), (5, 3), (16, 16), (64, 200)])
def test_params_are_truncated_lecun_kernels_and_zero_biases(dim, features):
    params = ci.canonical_params(3, dim, features)
    assert isinstance(params, Params)
    assert (params.dim, params.features) == (dim, features)
    for name, array in params.as_dict().items():
        assert array.dtype == np.float32, name
    np.testing.assert_array_equal(params.b1, 0.0)
    np.testing.assert_array_equal(params.b2, 0.0)
    for kernel, fan_in in [(params.w1, dim), (params.w2, features)]:
        limit = 2 / math.sqrt(fan_in) / 0.87962566103423978  # the truncation at +-2 std
        assert np.all(np.abs(kernel) < limit * (1 + 1e-6))


def test_params_are_repeatable_and_keep_the_low_32_bits_of_the_seed():
    a, b = ci.canonical_params(11, 4, 6), ci.canonical_params(11.0, 4, 6.0)
    big = ci.canonical_params(2**32 + 11, 4, 6)
    for name in ("w1", "w2"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        np.testing.assert_array_equal(getattr(a, name), getattr(big, name))
    assert not np.array_equal(a.w1, ci.canonical_params(12, 4, 6).w1)


@pytest.mark.parametrize(
    "bad",
    [b for b in BAD_INPUTS if b.argument != "x" and b.max_bytes is None],
    ids=lambda bad: bad.label,
)
def test_bad_seed_or_features_raise_naming_the_argument(bad):
    with pytest.raises(bad.error, match=bad.argument):
        ci.canonical_params(bad.seed, 3, bad.features)


@pytest.mark.parametrize(
    ("dim", "error"), [(0, ValueError), (-2, ValueError), (True, ValueError), (2.5, TypeError)]
)
def test_bad_dim_raises_naming_it(dim, error):
    with pytest.raises(error, match="dim"):
        ci.canonical_params(0, dim, 3)


@pytest.mark.parametrize(
    ("dim", "features", "budget"),
    [(2**31, 3, None), (2**21, 2**10, None), (2**10, 2**10, 2**20)],
    ids=["dim past 2**31", "dim * features past 2**31", "past REMAT_MAX_BYTES"],
)
def test_sizes_past_the_limits_raise_naming_dim(dim, features, budget, monkeypatch):
    if budget is not None:
        monkeypatch.setenv("REMAT_MAX_BYTES", str(budget))
    with pytest.raises(ValueError, match=r"\bdim\b"):
        ci.canonical_params(0, dim, features)


# A sample against Flax: every seed kind, shapes small and large.
FLAX_SEEDS = [0, 1, 5, 2**31 - 1, 2**31 + 1, 2**32 - 1, 2**32 + 5, 2**40 + 3, 2**63 - 1, 987654321]
# Each compiles; the benchmark sweeps many more. (513, 257) has kernels past one
# chunk of the threaded path, ending mid-chunk.
FLAX_SHAPES = [(1, 1), (7, 33), (256, 256), (513, 257)]


@pytest.fixture(scope="module")
def flax_port():
    pytest.importorskip("flax")
    from implementations.stacks.jax.flax_linen import FlaxLinen

    return FlaxLinen()


@pytest.mark.parametrize(("dim", "features"), FLAX_SHAPES)
def test_params_match_flax(flax_port, dim, features, max_ulps):
    for seed in FLAX_SEEDS if dim * features <= 1024 else FLAX_SEEDS[::3]:
        ours, theirs = (
            ci.canonical_params(seed, dim, features),
            flax_port.init_params(seed, dim, features),
        )
        for name in ("w1", "b1", "w2", "b2"):
            _assert_ulps(
                getattr(ours, name), getattr(theirs, name), max_ulps, f"{name} seed={seed}"
            )


def test_dim_accepts_numpy_integers():
    assert ci.canonical_params(0, np.int64(3), 2).dim == 3


# --- what the init keeps: the latest results, and its table on disk ------------------------


def test_a_repeated_init_is_a_fresh_read_only_copy_of_the_same_values(monkeypatch):
    monkeypatch.setattr(ci, "_kept", type(ci._kept)())
    first = ci.canonical_params(11, 16, 8)
    again = ci.canonical_params(11, 16, 8)
    for name in ("w1", "b1", "w2", "b2"):
        a, b = getattr(first, name), getattr(again, name)
        np.testing.assert_array_equal(a, b)
        assert not np.shares_memory(a, b), name  # no caller holds what is kept
        assert not a.flags.writeable
        assert not b.flags.writeable
    # A kept result is what a computation from scratch gives.
    fresh_w1 = ci.lecun_normal(ci.dense_kernel_key(11, 0), (16, 8))
    np.testing.assert_array_equal(again.w1, fresh_w1)


def test_the_kept_inits_stay_within_their_byte_budget(monkeypatch):
    monkeypatch.setattr(ci, "_kept", type(ci._kept)())
    monkeypatch.setattr(ci, "_KEPT_BYTES", 4 * (64 * 64 + 64 * 64) * 16)  # sixteen 64x64 inits
    for seed in range(20):
        ci.canonical_params(seed, 64, 64)
    ci.canonical_params(5, 64, 64)  # used again: now the latest
    assert list(ci._kept) == [(seed, 64, 64) for seed in (4, *range(6, 20), 5)]
    ci.canonical_params(0, 128, 128)  # larger than an eighth of the budget: not kept
    assert (0, 128, 128) not in ci._kept


def test_the_table_is_kept_on_disk_and_a_damaged_copy_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv(ci.TABLES_ENV, str(tmp_path))
    bound = 1.5  # not the lecun bound, so the in-process table of 2.0 does not hide anything
    ci._half_table.cache_clear()
    try:
        built = ci._half_table(bound)
        (path,) = tmp_path.glob("half-table-*.npy")
        ci._half_table.cache_clear()
        np.testing.assert_array_equal(ci._half_table(bound), built)  # read back
        # Flip one bit of one entry: the digest notices, and the table is built again.
        damaged = np.load(path)
        damaged.view(np.uint32)[123_457] ^= 1
        np.save(path, damaged)
        ci._half_table.cache_clear()
        np.testing.assert_array_equal(ci._half_table(bound), built)
        np.testing.assert_array_equal(np.load(path), built)  # and written again, whole
    finally:
        ci._half_table.cache_clear()


def test_the_table_file_is_named_for_the_source_it_came_from(tmp_path, monkeypatch):
    monkeypatch.setenv(ci.TABLES_ENV, str(tmp_path))
    name = tables._table_file(2.0).name
    digest = hashlib.sha256()
    for module in (xla_math, sampling, tables):
        digest.update(hashlib.sha256(Path(module.__file__).read_bytes()).digest())
    assert name == f"half-table-2.0-{digest.hexdigest()[:16]}.npy"


def test_the_table_file_is_named_for_every_module_the_table_comes_from():
    # A change to any code the table is computed or stored with makes a new file; the
    # PRNG and the Flax pipeline play no part in it, so a change to them keeps the file.
    makers = [
        sampling._half_table,
        sampling._build_half_table,
        sampling._truncated_normal_of_mantissa,
        sampling._mantissa_to_unit_float,
        sampling._scale_unit,
        sampling.truncation_bounds,
        xla_math._erf_inv,
        xla_math._log1p,
        xla_math._log,
        xla_math._horner,
        xla_math._fma,
        xla_math._flush_denormals,
        tables._read_table,
        tables._write_table,
    ]
    assert {f"{f.__module__.rsplit('.', 1)[1]}.py" for f in makers} == set(tables._SOURCES)
    assert {"threefry.py", "init.py", "keys.py"}.isdisjoint(tables._SOURCES)
