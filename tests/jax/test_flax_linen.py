"""The canonical port's own tests: against a float64 numpy MLP, its parameter tree, the
JAX instrument. The shared JAX-port tests (jit, grad, vmap, caching) are in
`test_jax_ports.py`."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

import jax.numpy as jnp  # noqa: E402

from conformance.checking.tolerance import analyse_forward  # noqa: E402
from implementations.stacks.jax import flax_linen  # noqa: E402
from tests.support import reference  # noqa: E402

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


def test_a_saved_dot_product_is_named_by_its_dot_general():
    # A policy that saves matmul outputs saves them through the reduce_precision
    # JAX inserts; the record names the operation a user wrote.
    from implementations.stacks.jax import backward_record

    def block(p, x):
        return jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    saving_dots = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)
    shapes = {"w1": (3, 4), "b1": (4,), "w2": (4, 4), "b2": (4,)}
    params = {name: jnp.ones(shape) for name, shape in shapes.items()}
    record = backward_record(
        saving_dots, (params, jnp.ones(3)), ("parameter", "input"), jnp.ones(4)
    )
    (activation,) = record.saved_by_origin("activation")
    assert activation.note == "output of dot_general (through reduce_precision)"
