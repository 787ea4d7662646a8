"""The Flax NNX port's own tests: what the cross-framework suite does not cover.

Expected values come from Flax linen, never from the code under test. One
shape, (D, F) = (6, 4), keeps compiles few.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from implementations import contract, load
from implementations.contract import Params
from tests.helpers import remat_equations, same_bits

nnx = pytest.importorskip("flax.nnx")
fn = pytest.importorskip("implementations.flax_nnx")

DIM, FEATURES = 6, 4
X = np.array([0.5, -1.25, 2.0, 0.0, 3.0, -0.5], np.float32)
G = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


@pytest.fixture(scope="module")
def port():
    return load("flax_nnx")


@pytest.fixture(scope="module")
def canonical():
    return load("flax_linen")


@pytest.fixture(scope="module")
def linen_forward():
    """Flax linen's own `nn_checkpoint_forward`: the expected values."""
    from implementations.flax_linen import nn_checkpoint_forward

    return nn_checkpoint_forward


def close(got, want) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# nnx.remat is on the gradient path, and only where asked for
# ---------------------------------------------------------------------------


def test_gradient_of_the_exercise_holds_remat():
    grad = jax.grad(lambda x: jnp.sum(fn.nn_checkpoint_forward(3, x, FEATURES)))
    assert remat_equations(jax.make_jaxpr(grad)(jnp.asarray(X)).jaxpr)


@pytest.mark.parametrize("checkpoint", [True, False])
def test_nnx_grad_of_the_module_holds_remat_only_when_on(port, checkpoint):
    p = port.init_params(0, DIM, FEATURES)

    def grads(pure, x):  # NNX's own way: nnx.grad of a loss of the module
        model = fn.merge(pure, checkpoint=checkpoint)
        return nnx.grad(lambda m, x: jnp.sum(m(x)))(model, x)

    jaxpr = jax.make_jaxpr(grads)(jax.tree.map(jnp.asarray, fn.params_to_pure(p)), X)
    assert bool(remat_equations(jaxpr.jaxpr)) is checkpoint


def test_nnx_grad_agrees_with_the_ports_vjp(port):
    # nnx.grad's State, in NNX's layout, converted: the same numbers as vjp.
    p = port.init_params(5, DIM, FEATURES)
    model = fn.params_to_model(p)
    state = nnx.grad(lambda m, x: m(x) @ jnp.asarray(G))(model, jnp.asarray(X))
    ours = fn.pure_to_params(nnx.to_pure_dict(state))
    expected = port.vjp(p, X, G)
    for name in contract.PARAM_NAMES:
        close(getattr(ours, name), getattr(expected, name))


def test_remat_refuses_a_bound_method():
    # The pitfall the port avoids by decorating the unbound method.
    model = fn.params_to_model(Params(np.ones((2, 3)), np.ones(3), np.ones((3, 3)), np.ones(3)))
    with pytest.raises(ValueError, match="bound methods"):
        nnx.remat(model.plain)


# ---------------------------------------------------------------------------
# NNX's layout, its own init, and the converters
# ---------------------------------------------------------------------------


def test_nnx_own_init_is_not_linens(canonical):
    # Same distributions, same layout, different keys: why the port sets
    # linen's parameters instead of trusting nnx.Rngs(seed).
    own = fn.model_to_params(fn.MLP(DIM, FEATURES, rngs=nnx.Rngs(7)))
    linen = canonical.init_params(7, DIM, FEATURES)
    assert own.w1.shape == linen.w1.shape == (DIM, FEATURES)  # kernel (in, out) in both
    assert not own.b1.any()
    assert not own.b2.any()
    assert not np.array_equal(own.w1, linen.w1)
    assert not np.array_equal(own.w2, linen.w2)


def test_init_equals_flax_linen_bit_for_bit(port, canonical):
    for seed in (0, 1, 2**32 - 1, 2**32 + 5, 2**63 - 1):
        ours, linen = port.init_params(seed, DIM, FEATURES), canonical.init_params(seed, DIM, 4)
        for name in contract.PARAM_NAMES:
            assert same_bits(getattr(ours, name), getattr(linen, name)), (name, seed)


@st.composite
def any_params(draw, max_side: int = 5) -> Params:
    dim, features = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    floats = hnp.from_dtype(np.dtype(np.float32))  # NaN, inf, -0 and subnormals too
    return Params(
        **{
            name: draw(hnp.arrays(np.float32, shape, elements=floats))
            for name, shape in contract.param_shapes(dim, features).items()
        }
    )


@settings(max_examples=20)
@given(any_params(), st.booleans())
def test_converters_round_trip(p, checkpoint):
    model = fn.params_to_model(p, checkpoint=checkpoint)
    assert isinstance(model.linear1, nnx.Linear)
    assert model.checkpoint is checkpoint
    # NNX's layout: kernel (in, out), as the canonical one.
    assert same_bits(model.linear1.kernel[...], p.w1)
    assert same_bits(model.linear1.bias[...], p.b1)
    assert same_bits(model.linear2.kernel[...], p.w2)
    assert same_bits(model.linear2.bias[...], p.b2)
    back = fn.model_to_params(model)
    assert all(same_bits(getattr(back, n), getattr(p, n)) for n in contract.PARAM_NAMES)
    pure = fn.params_to_pure(p)  # NNX's pure dict: {"linear1": {"kernel", "bias"}, ...}
    assert same_bits(pure["linear1"]["kernel"], p.w1)
    again = fn.pure_to_params(pure)
    assert all(same_bits(getattr(again, n), getattr(p, n)) for n in contract.PARAM_NAMES)


def test_converters_assert_shapes():
    w1, b1, w2, b2 = np.ones((3, 4)), np.ones(4), np.ones((4, 4)), np.ones(4)
    fn.from_canonical(w1, b1, w2, b2)
    with pytest.raises(AssertionError):
        fn.from_canonical(w1, b1, np.ones((4, 5)), b2)
    with pytest.raises(AssertionError):
        fn.from_canonical(w1, np.ones(3), w2, b2)
    wrong = {"linear2": {"kernel": w1, "bias": b2}}  # a (3, 4) kernel where (4, 4) belongs
    with pytest.raises(AssertionError):
        fn.pure_to_params(fn.from_canonical(w1, b1, w2, b2) | wrong)


def test_the_checkpoint_flag_is_static():
    # It lives in the graphdef: the two paths are two structures, one state.
    assert fn.graphdef(DIM, FEATURES, True) != fn.graphdef(DIM, FEATURES, False)
    assert fn.graphdef(DIM, FEATURES, True) is fn.graphdef(DIM, FEATURES, True)  # cached


def test_an_eager_module_matches_the_port(port):
    # The module works outside jit too, with either path, and warns about nothing.
    p = port.init_params(2, DIM, FEATURES)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for checkpoint in (True, False):
            y = fn.params_to_model(p, checkpoint=checkpoint)(jnp.asarray(X))
            close(y, port.forward(p, X, checkpoint=checkpoint))
        fn.model_to_params(fn.params_to_model(p))


# ---------------------------------------------------------------------------
# The exercise function: jit, grad, vmap, caching
# ---------------------------------------------------------------------------


def test_jit_with_static_seed_and_features(linen_forward):
    fast = jax.jit(fn.nn_checkpoint_forward, static_argnums=(0, 2))
    y = fast(9, jnp.asarray(X), FEATURES)
    assert y.shape == (FEATURES,)
    assert y.dtype == jnp.float32
    close(y, linen_forward(9, X, FEATURES))
    with pytest.raises(TypeError, match="seed"):
        jax.jit(fn.nn_checkpoint_forward, static_argnums=2)(9, jnp.asarray(X), FEATURES)


def test_grad_and_vmap_over_x(linen_forward):
    ours = jax.grad(lambda x: fn.nn_checkpoint_forward(2**40 + 9, x, FEATURES) @ G)
    linen = jax.grad(lambda x: linen_forward(2**40 + 9, x, FEATURES) @ G)
    close(ours(jnp.asarray(X)), linen(jnp.asarray(X)))
    xs = np.random.default_rng(3).standard_normal((5, DIM)).astype(np.float32)
    ys = jax.vmap(lambda x: fn.nn_checkpoint_forward(9, x, FEATURES))(jnp.asarray(xs))
    assert ys.shape == (5, FEATURES)
    for x, y in zip(xs, np.asarray(ys), strict=True):
        close(y, linen_forward(9, x, FEATURES))


def test_new_seeds_do_not_retrace():
    x = jnp.asarray(X)
    fn.nn_checkpoint_forward(0, x, FEATURES)
    compiled = fn._exercise.compiled(FEATURES)._cache_size()
    for seed in (1, 2**33, 2**63 - 1, 7.0):
        fn.nn_checkpoint_forward(seed, x, float(FEATURES))
    assert fn._exercise.compiled(FEATURES)._cache_size() == compiled


def test_x_left_unchanged():
    x = X.copy()
    fn.nn_checkpoint_forward(1, x, FEATURES)
    jax.grad(lambda v: jnp.sum(fn.nn_checkpoint_forward(1, v, FEATURES)))(x)
    assert same_bits(x, X)
    assert x.flags.writeable
