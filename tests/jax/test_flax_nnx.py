"""The Flax NNX port's own tests: NNX's own transforms, layout and pitfalls.

The shared JAX-port tests (jaxprs, jit, grad, vmap, caching) are in
`test_jax_ports.py`. Expected values come from Flax linen, never from the
code under test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")
fn = pytest.importorskip("implementations.stacks.jax.flax_nnx")

import jax.numpy as jnp  # noqa: E402

from implementations import contract  # noqa: E402
from tests.support.helpers import remat_equations, same_bits  # noqa: E402

PORT = fn.FlaxNnx()
DIM, FEATURES = 6, 4
X = np.array([0.5, -1.25, 2.0, 0.0, 3.0, -0.5], np.float32)
G = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


def model_of(params: contract.Params) -> fn.MLP:
    return fn.merge(jax.tree.map(jnp.asarray, PORT.to_native(*params.as_dict().values())))


@pytest.mark.parametrize("checkpoint", [True, False])
def test_nnx_grad_of_the_module_holds_remat_only_when_on(checkpoint):
    pure = PORT.to_native(*PORT.init_params(0, DIM, FEATURES).as_dict().values())

    def grads(pure, x):  # NNX's own way: nnx.grad of a loss of the module
        def loss(model, x):
            return jnp.sum(model.checkpointed(x) if checkpoint else model.plain(x))

        return nnx.grad(loss)(fn.merge(pure), x)

    jaxpr = jax.make_jaxpr(grads)(jax.tree.map(jnp.asarray, pure), X)
    assert bool(remat_equations(jaxpr.jaxpr)) is checkpoint


def test_nnx_grad_agrees_with_the_ports_vjp():
    # nnx.grad's State, in NNX's layout, converted: the same numbers as vjp.
    params = PORT.init_params(5, DIM, FEATURES)
    model = model_of(params)
    state = nnx.grad(lambda m, x: m.checkpointed(x) @ jnp.asarray(G))(model, jnp.asarray(X))
    ours = PORT.to_canonical(nnx.to_pure_dict(state))
    expected = PORT.vjp(params, X, G)
    for name, got in zip(contract.PARAM_NAMES, ours, strict=True):
        np.testing.assert_allclose(got, getattr(expected, name), rtol=1e-5, atol=1e-6)


def test_remat_refuses_a_bound_method():
    # The pitfall the port avoids by decorating the unbound method.
    model = model_of(PORT.init_params(0, 2, 3))
    with pytest.raises(ValueError, match="bound methods"):
        nnx.remat(model.plain)


def test_the_layout_is_nnx_pure_dict_with_kernels_in_by_out(canonical):
    params = canonical.init_params(7, DIM, FEATURES)
    pure = nnx.to_pure_dict(nnx.state(model_of(params), nnx.Param))
    assert set(pure) == {"linear1", "linear2"}
    assert same_bits(pure["linear1"]["kernel"], params.w1)  # (D, F), as the canonical one
    assert same_bits(pure["linear2"]["bias"], params.b2)


def test_the_converters_assert_shapes():
    w1, b1, w2, b2 = np.ones((3, 4)), np.ones(4), np.ones((4, 4)), np.ones(4)
    PORT.to_native(w1, b1, w2, b2)
    with pytest.raises(AssertionError):
        PORT.to_native(w1, b1, np.ones((4, 5)), b2)
    with pytest.raises(AssertionError):
        PORT.to_native(w1, np.ones(3), w2, b2)


def test_nnx_own_init_is_not_linens(canonical):
    # Same distributions, same layout, different keys: why the port sets
    # linen's parameters instead of trusting nnx.Rngs(seed).
    own = fn.MLP(DIM, FEATURES, rngs=nnx.Rngs(7))
    linen = canonical.init_params(7, DIM, FEATURES)
    assert own.linear1.kernel[...].shape == linen.w1.shape == (DIM, FEATURES)
    assert not own.linear1.bias[...].any()
    assert not np.array_equal(own.linear1.kernel[...], linen.w1)
    assert not np.array_equal(own.linear2.kernel[...], linen.w2)


def test_the_graphdef_is_built_once_per_shape():
    assert fn.graphdef(DIM, FEATURES) is fn.graphdef(DIM, FEATURES)


def test_an_eager_module_matches_the_port():
    # The module works outside jit too, with either path, and warns about nothing.
    params = PORT.init_params(2, DIM, FEATURES)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = model_of(params)
        for run, checkpoint in ((model.checkpointed, True), (model.plain, False)):
            np.testing.assert_allclose(
                run(jnp.asarray(X)), PORT.forward(params, X, checkpoint=checkpoint), atol=1e-6
            )
