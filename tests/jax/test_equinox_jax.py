"""The Equinox port's own tests: its layout and its pitfalls. The shared JAX-port
tests (jaxprs, jit, grad, vmap, caching) are in `test_jax_ports.py`."""

from __future__ import annotations

import numpy as np
import pytest

eqx = pytest.importorskip("equinox")
jax = pytest.importorskip("jax")
ej = pytest.importorskip("implementations.stacks.jax.equinox_jax")

from tests.support.helpers import same_bits  # noqa: E402

PORT = ej.EquinoxJax()
ARRAYS = (np.arange(12.0).reshape(3, 4), np.arange(4.0), np.arange(16.0).reshape(4, 4), -np.ones(4))


def test_the_layout_is_equinoxs_own_weight_out_by_in():
    w1, b1, w2, b2 = (a.astype(np.float32) for a in ARRAYS)
    model = PORT.to_native(w1, b1, w2, b2)
    assert isinstance(model.linear1, eqx.nn.Linear)
    assert (model.linear1.in_features, model.linear1.out_features) == (3, 4)
    assert same_bits(model.linear1.weight, w1.T)  # (out, in): the kernel transposed
    assert same_bits(model.linear2.weight, w2.T)
    assert same_bits(model.linear1.bias, b1)


def test_the_converters_assert_shapes():
    w1, b1, w2, b2 = ARRAYS
    PORT.to_native(w1, b1, w2, b2)
    with pytest.raises(AssertionError):
        PORT.to_native(w1, b1, np.ones((4, 5)), b2)
    with pytest.raises(AssertionError):
        PORT.to_native(w1, np.ones(3), w2, b2)


def test_equinox_own_init_is_not_flaxs():
    # Uniform weights and a non-zero bias: why the port sets Flax's parameters.
    linear = eqx.nn.Linear(6, 4, key=jax.random.PRNGKey(0))
    assert np.asarray(linear.bias).any()


def test_plain_jax_checkpoint_of_the_module_fails_under_grad():
    # The pitfall `eqx.filter_checkpoint` avoids: jax.checkpoint hashes the bound
    # method, and with it the module, whose leaves are tracers under grad.
    model = PORT.to_native(*(np.asarray(a, np.float32) for a in ARRAYS))
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="unhashable"):
        jax.grad(lambda m: jax.checkpoint(m.plain)(x).sum())(model)
