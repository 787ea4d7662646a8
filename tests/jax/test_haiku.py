"""The Haiku port's own tests: its names, its init, and `hk.remat`'s pitfalls. The shared
JAX-port tests (jaxprs, jit, grad, vmap, caching, round trips) are in `test_jax_ports.py`."""

from __future__ import annotations

import numpy as np
import pytest

hk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")
port_module = pytest.importorskip("implementations.stacks.jax.haiku")

import jax.numpy as jnp  # noqa: E402

from implementations.stacks.jax import init_params  # noqa: E402
from tests.support.helpers import remat_equations, same_bits  # noqa: E402

PORT = port_module.Haiku()
DIM, FEATURES = 3, 4  # D != F, so that a shape tells the layers apart
X = np.array([0.5, -1.25, 2.0], np.float32)


def _haiku_init(features: int, forward=None):
    """Haiku's own parameters for the port's MLP: names and shapes from Haiku itself."""
    forward = forward or (lambda x: port_module.MLP(features)(x))
    return hk.transform(forward).init(jax.random.PRNGKey(0), jnp.asarray(X))


def test_the_layout_is_haikus_own_names_and_w_in_by_out():
    own = _haiku_init(FEATURES)
    shapes = {name: {k: v.shape for k, v in leaf.items()} for name, leaf in own.items()}
    # The first layer created is `linear`, the second `linear_1`, in the module's scope.
    assert shapes == {
        "mlp/linear": {"w": (DIM, FEATURES), "b": (FEATURES,)},
        "mlp/linear_1": {"w": (FEATURES, FEATURES), "b": (FEATURES,)},
    }
    canonical = init_params(5, DIM, FEATURES)
    native = PORT.to_native(canonical.w1, canonical.b1, canonical.w2, canonical.b2)
    assert jax.tree.structure(native) == jax.tree.structure(own)
    assert same_bits(native["mlp/linear"]["w"], canonical.w1)  # (in, out): no transpose
    assert same_bits(native["mlp/linear_1"]["b"], canonical.b2)


def test_the_port_computes_haikus_mlp_on_haikus_own_parameters():
    # Haiku's apply on its own init against x @ w + b by hand, names read as the port reads them.
    own = _haiku_init(FEATURES)
    first, second = own["mlp/linear"], own["mlp/linear_1"]
    by_hand = np.maximum(X @ first["w"] + first["b"], 0) @ second["w"] + second["b"]
    for checkpoint in (True, False):
        np.testing.assert_allclose(PORT.apply(own, X, checkpoint), by_hand, rtol=1e-6, atol=1e-6)


def test_layer_names_follow_creation_order_not_call_order():
    # The pitfall the port's MLP avoids: in hk.Linear(F)(relu(hk.Linear(F)(x))) Python
    # creates the outer (second) layer first, so it is the one named `linear`.
    def nested(x):
        return hk.Linear(FEATURES)(jax.nn.relu(hk.Linear(FEATURES)(x)))

    own = hk.transform(nested).init(jax.random.PRNGKey(0), jnp.asarray(X))
    assert own["linear"]["w"].shape == (FEATURES, FEATURES)  # the second layer
    assert own["linear_1"]["w"].shape == (DIM, FEATURES)  # the first


def test_the_converters_assert_shapes():
    w1, b1, w2, b2 = (np.ones(s, np.float32) for s in [(DIM, FEATURES), 4, (4, 4), 4])
    PORT.to_native(w1, b1, w2, b2)
    with pytest.raises(AssertionError):
        PORT.to_native(w1, b1, np.ones((4, 5), np.float32), b2)
    with pytest.raises(AssertionError):
        PORT.to_native(w1, np.ones(3, np.float32), w2, b2)


def test_haikus_own_init_is_not_flaxs():
    # Other keys (Haiku's rng sequence) and no variance correction: why the port
    # loads Flax's parameters. Haiku's biases are zeros, as Flax's.
    own = _haiku_init(FEATURES)
    flax = init_params(0, DIM, FEATURES)
    assert not np.array_equal(np.asarray(own["mlp/linear"]["w"]), flax.w1)
    assert not np.asarray(own["mlp/linear"]["b"]).any()


def test_hk_remat_works_only_inside_a_transform():
    with pytest.raises(ValueError, match=r"outside of hk\.transform"):
        hk.remat(lambda x: x)(jnp.ones(2))


def _grad_jaxpr(apply, params, *args):
    grad = jax.grad(lambda p: jnp.sum(apply(p, *args)))
    return jax.make_jaxpr(grad)(params).jaxpr


def test_hk_remat_with_an_rng_and_with_state():
    # hk.remat threads Haiku's whole state through jax.checkpoint: an rng given to
    # apply, or transform_with_state, must change neither the output nor the remat.
    def forward(x, checkpoint):
        mlp = port_module.MLP(FEATURES)
        return hk.remat(mlp)(x) if checkpoint else mlp(x)

    params = PORT.to_native(*init_params(1, DIM, FEATURES).as_dict().values())
    expected = PORT.apply(params, X, True)
    key = jax.random.PRNGKey(7)

    with_rng = hk.transform(forward)
    assert same_bits(with_rng.apply(params, key, X, True), expected)
    assert remat_equations(_grad_jaxpr(lambda p: with_rng.apply(p, key, X, True), params))

    stateful = hk.transform_with_state(forward)
    state = stateful.init(key, X, True)[1]
    assert state == {}  # the block holds no state
    out, new_state = stateful.apply(params, state, None, X, True)
    assert same_bits(out, expected)
    assert new_state == {}
    assert remat_equations(
        _grad_jaxpr(lambda p: stateful.apply(p, state, None, X, True)[0], params)
    )
    assert not remat_equations(
        _grad_jaxpr(lambda p: stateful.apply(p, state, None, X, False)[0], params)
    )


def test_one_transformed_function_per_width():
    assert port_module.transformed(FEATURES) is port_module.transformed(FEATURES)
    assert port_module.transformed(FEATURES) is not port_module.transformed(FEATURES + 1)


def test_matmul_precision_is_read_from_the_lowered_program():
    found = PORT.matmul_precision()
    assert found["default"] == "DEFAULT"  # jax_default_matmul_precision unset
    assert found["pinned"] == "HIGHEST"
    PORT.pin_matmul_precision()
    assert PORT.matmul_precision()["current"] == "HIGHEST"
    # On the CPU the two settings give the same float32 bits.
    a = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    with jax.default_matmul_precision(None):
        default = jax.jit(jnp.matmul)(a, a)
    with jax.default_matmul_precision("highest"):
        pinned = jax.jit(jnp.matmul)(a, a)
    if found["backend"] == "cpu":
        assert same_bits(default, pinned)
