"""The canonical port, checked by hand against a float64 numpy MLP."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

import jax.numpy as jnp  # noqa: E402

from conformance.tolerance import analyse_forward, forward_bound, vjp_bounds  # noqa: E402
from implementations import flax_linen  # noqa: E402
from implementations.contract import BAD_INPUTS  # noqa: E402
from tests import reference  # noqa: E402
from tests.helpers import remat_equations  # noqa: E402

PORT = flax_linen.FlaxLinen()
SHAPES = [(1, 1), (3, 4), (16, 16), (7, 33), (64, 5)]


def _x(rng, dim):
    return rng.normal(size=dim).astype(np.float32)


@pytest.mark.parametrize(("dim", "features"), SHAPES)
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_forward_matches_numpy(seed, dim, features):
    x = _x(np.random.default_rng(seed), dim)
    params = PORT.init_params(seed, dim, features)
    out = flax_linen.nn_checkpoint_forward(seed, x, features)
    assert out.shape == (features,)
    assert out.dtype == jnp.float32
    expected = reference.forward(params, x)
    # One float32 implementation against the exact result: within e2.
    error = np.abs(np.asarray(out, np.float64) - expected)
    assert np.all(error <= analyse_forward(params, x).e2)


def test_parameter_tree_is_two_default_dense_layers():
    x = jnp.ones((3,), jnp.float32)
    variables = flax_linen.CheckpointMLP(features=4).init(jax.random.PRNGKey(0), x)
    assert set(variables) == {"params"}
    tree = variables["params"]
    assert set(tree) == {"Dense_0", "Dense_1"}
    assert {k: v.shape for k, v in tree["Dense_0"].items()} == {"kernel": (3, 4), "bias": (4,)}
    assert {k: v.shape for k, v in tree["Dense_1"].items()} == {"kernel": (4, 4), "bias": (4,)}
    for layer in tree.values():
        assert np.all(np.asarray(layer["bias"]) == 0.0)  # default bias init: zeros
        assert np.any(np.asarray(layer["kernel"]) != 0.0)


def test_wrapping_the_class_gives_the_same_params_as_the_plain_module():
    x = jnp.ones((5,), jnp.float32)
    wrapped = flax_linen.CheckpointMLP(features=6).init(jax.random.PRNGKey(7), x)
    plain = flax_linen.MLP(features=6).init(jax.random.PRNGKey(7), x)
    for a, b in zip(
        jax.tree_util.tree_leaves(wrapped), jax.tree_util.tree_leaves(plain), strict=True
    ):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad", BAD_INPUTS, ids=lambda bad: bad.label)
@pytest.mark.parametrize("form", ["numpy", "jax"])
def test_bad_input_raises_naming_the_argument(bad, form):
    native = np.asarray if form == "numpy" else jnp.asarray
    with pytest.raises(bad.error, match=bad.argument):
        flax_linen.nn_checkpoint_forward(bad.seed, bad.x(native), bad.features)


@pytest.mark.parametrize("make", [np.float32, np.float64, list], ids=["f32", "f64", "list"])
def test_x_is_left_unchanged(make):
    source = [0.5, -1.25, 3.0, 0.0]
    x = np.array(source, dtype=make) if make is not list else list(source)
    before = np.array(x, copy=True)
    flax_linen.nn_checkpoint_forward(0, x, 3)
    np.testing.assert_array_equal(np.asarray(x), before)
    if make is not list:
        assert x.dtype == np.dtype(make)


def test_integer_x_is_converted_to_float32():
    out_int = flax_linen.nn_checkpoint_forward(0, np.array([1, -2, 3]), 4)
    out_float = flax_linen.nn_checkpoint_forward(0, np.array([1.0, -2.0, 3.0], np.float32), 4)
    np.testing.assert_array_equal(out_int, out_float)


@pytest.mark.parametrize(
    ("seed", "features"),
    [
        (3.0, 5),
        (3, 5.0),
        (np.int64(3), np.int32(5)),
        (np.float32(3), np.float64(5)),
        (jnp.int32(3), jnp.float32(5)),
        (np.array(3), np.array(5.0)),
    ],
)
def test_scalar_forms_give_the_int_result(seed, features):
    x = np.array([0.3, -0.7], np.float32)
    np.testing.assert_array_equal(
        flax_linen.nn_checkpoint_forward(seed, x, features),
        flax_linen.nn_checkpoint_forward(3, x, 5),
    )


@pytest.mark.parametrize(("dim", "features"), [(2, 3), (16, 16), (9, 40)])
def test_checkpoint_on_and_off_agree(dim, features):
    rng = np.random.default_rng(dim * 100 + features)
    params = reference.random_params(rng, dim, features)
    x, c = _x(rng, dim), rng.normal(size=features).astype(np.float32)
    on, off = PORT.forward(params, x, checkpoint=True), PORT.forward(params, x, checkpoint=False)
    assert np.all(np.abs(on - off) <= forward_bound(params, x))
    grads_on = PORT.vjp(params, x, c, checkpoint=True).as_dict()
    grads_off = PORT.vjp(params, x, c, checkpoint=False).as_dict()
    bounds = vjp_bounds(params, x, c)
    expected = reference.vjp(params, x, c)
    for name in expected:
        assert np.all(np.abs(grads_on[name] - grads_off[name]) <= bounds[name]), name
        assert np.all(np.abs(grads_on[name] - expected[name]) <= bounds[name]), name


def test_the_gradient_jaxpr_holds_the_checkpoint():
    x = jnp.arange(4.0, dtype=jnp.float32)

    def loss(x):
        return flax_linen.nn_checkpoint_forward(0, x, 3).sum()

    assert remat_equations(jax.make_jaxpr(jax.grad(loss))(x).jaxpr)

    def plain_loss(x):
        model = flax_linen.MLP(features=3)
        return model.apply(model.init(jax.random.PRNGKey(0), x), x).sum()

    assert not remat_equations(jax.make_jaxpr(jax.grad(plain_loss))(x).jaxpr)


def test_works_under_jit_grad_and_vmap():
    x = np.array([0.5, -1.0, 2.0], np.float32)
    eager = flax_linen.nn_checkpoint_forward(4, x, 6)
    jitted = jax.jit(flax_linen.nn_checkpoint_forward, static_argnums=(0, 2))(4, x, 6)
    np.testing.assert_allclose(jitted, eager, rtol=0, atol=1e-6)

    batch = np.stack([x, 2 * x, -x])
    mapped = jax.vmap(lambda x: flax_linen.nn_checkpoint_forward(4, x, 6))(batch)
    for row, x_row in zip(mapped, batch, strict=True):
        np.testing.assert_allclose(row, flax_linen.nn_checkpoint_forward(4, x_row, 6), atol=1e-6)

    c = np.linspace(-1, 1, 6).astype(np.float32)
    grad = jax.grad(lambda x: flax_linen.nn_checkpoint_forward(4, x, 6) @ c)(x)
    params = PORT.init_params(4, 3, 6)
    expected = reference.vjp(params, x, c)["x"]
    assert np.all(np.abs(np.asarray(grad) - expected) <= vjp_bounds(params, x, c)["x"])


def test_traced_x_still_gets_shape_and_dtype_checks():
    f = jax.jit(flax_linen.nn_checkpoint_forward, static_argnums=(0, 2))
    with pytest.raises(ValueError, match="x"):
        f(0, jnp.ones((2, 3)), 4)
    with pytest.raises(TypeError, match="x"):
        f(0, jnp.array([True, False]), 4)
    with pytest.raises(TypeError, match="seed"):
        jax.jit(flax_linen.nn_checkpoint_forward, static_argnums=2)(0, jnp.ones(3), 4)


def test_the_jax_instrument_tells_inputs_parameters_activations_and_constants_apart():
    params = PORT.init_params(0, 3, 4)
    x = np.array([0.5, -1.0, 2.0], np.float32)
    plain = PORT.backward_record(params, x, checkpoint=False)
    by_origin = sorted((t.origin, t.shape, t.dtype) for t in plain.saved)
    # Hand-derived: the VJP of relu(x @ W1 + b1) @ W2 + b2 keeps x (for dW1), W1 (for dx),
    # W2 (for da), the relu mask and its output (for dW2), and the zeros relu's select uses.
    assert by_origin == [
        ("activation", (4,), "bool"),
        ("activation", (4,), "float32"),
        ("constant", (4,), "float32"),
        ("input", (3,), "float32"),
        ("parameter", (3, 4), "float32"),
        ("parameter", (4, 4), "float32"),
    ]
    assert plain.saved_bytes == 4 + 16 + 12  # mask, relu output, x
    checkpointed = PORT.backward_record(params, x, checkpoint=True)
    assert {t.origin for t in checkpointed.saved} == {"input", "parameter"}
    assert checkpointed.saved_bytes == 12
