"""What every JAX port shares and the suite does not check: jaxprs, jit, grad, vmap, caching.

Parametrized by port. Expected values come from Flax linen (skipped where it
is not installed) or from the float64 reference in `tests.support.reference`, never
from the code under test. One shape, (D, F) = (6, 4), keeps compiles few.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

from conformance.checking.tolerance import analyse_forward, vjp_bounds  # noqa: E402
from implementations import contract  # noqa: E402
from implementations.contract import Params  # noqa: E402
from implementations.stacks import jax as porting  # noqa: E402
from implementations.stacks.jax.flax_init import jitted_init  # noqa: E402
from tests.support import reference  # noqa: E402
from tests.support.helpers import port_or_skip, remat_equations, same_bits  # noqa: E402

JAX_PORTS = ["flax_linen", "equinox_jax", "flax_nnx", "jax_checkpoint", "haiku"]
NON_CANONICAL = [name for name in JAX_PORTS if name != "flax_linen"]
DIM, FEATURES = 6, 4
X = np.array([0.5, -1.25, 2.0, 0.0, 3.0, -0.5], np.float32)
G = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
EDGE_SEEDS = [0, 1, 2**31, 2**32 - 1, 2**32 + 7, 2**40 + 12345, 2**63 - 1]


@pytest.fixture(params=JAX_PORTS)
def port(request):
    return port_or_skip(request.param)


@pytest.fixture(params=NON_CANONICAL)
def ported(request):
    """A JAX port other than the canonical one."""
    return port_or_skip(request.param)


def close(got, want) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def within_reference(got, params: Params, x: np.ndarray) -> None:
    """One float32 implementation against the exact forward pass: within e2."""
    error = np.abs(np.asarray(got, np.float64) - reference.forward(params, x))
    assert np.all(error <= analyse_forward(params, x).e2)


# ---------------------------------------------------------------------------
# The checkpoint is on the gradient path, and only where asked for
# ---------------------------------------------------------------------------


def test_gradient_of_the_exercise_holds_remat(port):
    grad = jax.grad(lambda x: jnp.sum(port.nn_checkpoint_forward(3, x, FEATURES)))
    assert remat_equations(jax.make_jaxpr(grad)(jnp.asarray(X)).jaxpr)


@pytest.mark.parametrize("checkpoint", [True, False])
def test_gradient_of_apply_holds_remat_only_when_on(port, checkpoint):
    params = port.init_params(0, DIM, FEATURES)
    fn, args = port.differentiable(params, X, checkpoint)
    grad = jax.grad(lambda *args: jnp.sum(fn(*args)), argnums=(0, 1))
    assert bool(remat_equations(jax.make_jaxpr(grad)(*args).jaxpr)) is checkpoint


# ---------------------------------------------------------------------------
# Converters and the init
# ---------------------------------------------------------------------------


@st.composite
def any_arrays(draw, max_side: int = 5) -> tuple[np.ndarray, ...]:
    dim, features = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    floats = hnp.from_dtype(np.dtype(np.float32))  # NaN, inf, -0 and subnormals too
    shapes = contract.param_shapes(dim, features)
    return tuple(draw(hnp.arrays(np.float32, shapes[n], elements=floats)) for n in shapes)


@pytest.mark.parametrize("name", JAX_PORTS)
@settings(max_examples=20)
@given(arrays=any_arrays())
def test_converters_round_trip_any_bits(name, arrays):
    port = port_or_skip(name)
    native = port.to_native(*arrays)
    back = port.to_canonical(jax.tree.map(jnp.asarray, native))  # through jax arrays
    assert all(map(same_bits, back, arrays))
    again = port.to_native(*back)
    assert jax.tree.structure(again) == jax.tree.structure(native)
    assert all(map(same_bits, jax.tree.leaves(again), jax.tree.leaves(native)))


def test_init_equals_flax_linen_bit_for_bit(ported, canonical):
    for seed in EDGE_SEEDS:
        for dim, features in ((1, 1), (DIM, FEATURES), (20, 3)):
            ours = ported.init_params(seed, dim, features)
            linen = canonical.init_params(seed, dim, features)
            for name in contract.PARAM_NAMES:
                assert same_bits(getattr(ours, name), getattr(linen, name)), (name, seed, dim)


def test_the_init_is_shared_not_copied(ported):
    assert type(ported).init_params is porting.JaxPort.init_params


@pytest.mark.parametrize("shape", [(1, 1), (DIM, FEATURES), (300, 17), (1024, 1024)])
@pytest.mark.parametrize("seed", [0, 2**32 - 1, 2**63 - 1])
def test_the_out_in_draw_is_jax_random_transposed(shape, seed):
    # Equinox's exercise draws its kernels (out, in); jax's own initializer decides.
    key = jax.random.PRNGKey(seed)
    want = jax.nn.initializers.lecun_normal()(key, shape, jnp.float32)
    got = jax.jit(lambda k: porting.lecun_normal(k, shape, out_in=True))(key)
    assert same_bits(got, want)
    typed = jax.random.wrap_key_data(key)  # a typed key draws the same
    assert same_bits(porting.lecun_normal(typed, shape, out_in=True), want)


@pytest.mark.parametrize("seed", EDGE_SEEDS)
def test_key_made_inside_jit_is_prngkey(seed):
    # The shared init builds PRNGKey inside its compiled function from np.int64(seed).
    inside = jax.jit(jax.random.PRNGKey)(porting.seed_array(seed))
    assert np.array_equal(np.asarray(inside), np.asarray(jax.random.PRNGKey(seed)))


def test_shared_init_shape_and_statistics_without_flax():
    # Independent of Flax: zero biases, kernels inside +-2 stddev with variance
    # 1 / fan_in, pooled over many seeds at one (already compiled) shape.
    draws = [porting.init_params(seed, DIM, FEATURES) for seed in range(0, 400 * 2**20, 2**20)]
    assert not any(p.b1.any() or p.b2.any() for p in draws)
    for name, fan_in in (("w1", DIM), ("w2", FEATURES)):
        pooled = np.stack([getattr(p, name) for p in draws]).astype(np.float64)
        stddev = np.sqrt(1 / fan_in) / 0.87962566103423978
        assert np.abs(pooled).max() < 2 * stddev * (1 + 1e-6)
        assert np.mean(pooled) == pytest.approx(0, abs=0.05 * stddev)
        assert np.var(pooled) == pytest.approx(1 / fan_in, rel=0.05)


def test_init_keeps_the_low_32_bits_of_the_seed(port):
    base = port.init_params(12345, DIM, FEATURES)
    for same in (12345 + 2**32, 12345 + 2**40, 12345.0, np.int64(12345), jnp.asarray(12345)):
        assert same_bits(port.init_params(same, DIM, FEATURES).w1, base.w1), repr(same)
    assert not np.array_equal(port.init_params(12346, DIM, FEATURES).w1, base.w1)


# ---------------------------------------------------------------------------
# Numerics against the float64 reference (independent of Flax)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("checkpoint", [True, False])
def test_forward_and_vjp_match_the_float64_reference(port, checkpoint):
    rng = np.random.default_rng(7)
    params = reference.random_params(rng, DIM, FEATURES)
    within_reference(port.forward(params, X, checkpoint=checkpoint), params, X)
    grads = port.vjp(params, X, G, checkpoint=checkpoint).as_dict()
    exact, bounds = reference.vjp(params, X, G), vjp_bounds(params, X, G)
    for name, got in grads.items():
        # vjp_bounds bounds two implementations apart (2e); one is within e of exact.
        assert np.all(np.abs(got - exact[name]) <= bounds[name] / 2), name


def test_the_exercise_matches_the_float64_reference(port):
    for seed in (0, 2**40 + 3):
        y = port.nn_checkpoint_forward(seed, X, FEATURES)
        within_reference(y, port.init_params(seed, DIM, FEATURES), X)


# ---------------------------------------------------------------------------
# The exercise function: jit, grad, vmap, caching, inputs
# ---------------------------------------------------------------------------


def test_jit_with_static_seed_and_features(ported, linen_forward):
    fast = jax.jit(ported.nn_checkpoint_forward, static_argnums=(0, 2))
    y = fast(9, jnp.asarray(X), FEATURES)
    assert isinstance(y, jax.Array)
    assert (y.shape, y.dtype) == ((FEATURES,), jnp.float32)
    close(y, linen_forward(9, X, FEATURES))
    with pytest.raises(TypeError, match=r"\bseed\b"):  # a traced seed cannot pick parameters
        jax.jit(ported.nn_checkpoint_forward, static_argnums=2)(9, jnp.asarray(X), FEATURES)


def test_grad_and_vmap_over_x(ported, linen_forward):
    ours = jax.grad(lambda x: ported.nn_checkpoint_forward(2**40 + 9, x, FEATURES) @ G)
    linen = jax.grad(lambda x: linen_forward(2**40 + 9, x, FEATURES) @ G)
    close(ours(jnp.asarray(X)), linen(jnp.asarray(X)))
    xs = np.random.default_rng(3).standard_normal((5, DIM)).astype(np.float32)
    ys = jax.vmap(lambda x: ported.nn_checkpoint_forward(9, x, FEATURES))(jnp.asarray(xs))
    assert ys.shape == (5, FEATURES)
    for x, y in zip(xs, np.asarray(ys), strict=True):
        close(y, linen_forward(9, x, FEATURES))


def test_traced_x_still_gets_shape_and_dtype_checks(port):
    fast = jax.jit(port.nn_checkpoint_forward, static_argnums=(0, 2))
    with pytest.raises(ValueError, match=r"\bx\b"):
        fast(0, jnp.ones((2, 3)), FEATURES)
    with pytest.raises(TypeError, match=r"\bx\b"):
        fast(0, jnp.array([True, False]), FEATURES)


def test_new_seeds_do_not_retrace(ported):
    # One compiled init per (D, F) and one compiled MLP: the seed is an argument, not a constant.
    x = jnp.asarray(X)
    ported.nn_checkpoint_forward(0, x, FEATURES)
    exercise = ported.compiled.exercise
    init = jitted_init(len(X), FEATURES, out_in=exercise.out_in)
    compiled = (init._cache_size(), exercise.apply._cache_size())
    inits = jitted_init.cache_info().currsize
    for seed in (1, 2**33, 2**63 - 1, 7.0):
        ported.nn_checkpoint_forward(seed, x, float(FEATURES))  # features 4.0 is the int 4
    assert (init._cache_size(), exercise.apply._cache_size()) == compiled
    assert jitted_init.cache_info().currsize == inits


def test_the_ports_share_one_compiled_init_per_shape():
    # Each port's exercise takes its init from the one cache, for the same (D, F) and layout.
    x = jnp.asarray(X)
    for name in NON_CANONICAL:
        ported = port_or_skip(name)
        ported.nn_checkpoint_forward(0, x, FEATURES)
        hits = jitted_init.cache_info().hits
        ported.nn_checkpoint_forward(1, x, FEATURES)
        assert jitted_init.cache_info().hits == hits + 1, name


def test_scalar_forms_and_integer_x_give_the_int_result(port):
    base = np.asarray(port.nn_checkpoint_forward(3, X, FEATURES))
    for seed, features in [
        (3.0, 4.0),
        (np.int64(3), np.float32(4)),
        (jnp.asarray(3), jnp.asarray(4.0)),
        (np.array(3), np.array(4.0)),
    ]:
        assert same_bits(np.asarray(port.nn_checkpoint_forward(seed, X, features)), base)
    ints = port.nn_checkpoint_forward(3, np.array([1, -2, 3, 0, 1, 5], np.int32), FEATURES)
    assert (ints.dtype, ints.shape) == (jnp.float32, (FEATURES,))
    floats = port.nn_checkpoint_forward(3, [1.0, -2.0, 3.0, 0.0, 1.0, 5.0], FEATURES)
    assert same_bits(np.asarray(ints), np.asarray(floats))


def test_x_left_unchanged_under_grad(port):
    x = X.copy()
    port.nn_checkpoint_forward(1, x, FEATURES)
    jax.grad(lambda v: jnp.sum(port.nn_checkpoint_forward(1, v, FEATURES)))(x)
    assert same_bits(x, X)
    assert x.flags.writeable
