"""The Equinox port: an `eqx.Module` MLP, checkpointed with `eqx.filter_checkpoint`.

Equinox's own layout is kept: an `eqx.nn.Linear` weight is `(out, in)`, the
transpose of the canonical (Flax) kernel. `params_to_model` and
`model_to_params` convert, with shape asserts.

The seeded init reproduces Flax's `MLP.init` with `jax.random` alone: this
module never imports flax. Flax derives each parameter's key by folding a
SHA-1 of the scope name and rng counter into `PRNGKey(seed)` (see
`flax_rng`), draws the `Dense` kernel from `lecun_normal` in its `(in, out)`
shape, and sets the bias to zeros. We draw the same bits in the same shape,
then transpose. That init lives in `jax_flax_init`, shared with the other JAX ports.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import jax_flax_init
from .contract import Grads, Params
from .jax_flax_init import CompiledExercise
from .jax_port import JaxPort


class MLP(eqx.Module):
    """`Linear(D, F)` -> relu -> `Linear(F, F)`, run checkpointed or plain."""

    linear1: eqx.nn.Linear  # weight (F, D), bias (F,)
    linear2: eqx.nn.Linear  # weight (F, F), bias (F,)
    # Static, so the choice lives in the treedef: jit compiles each path once,
    # and the same arrays can run either way (`dataclasses.replace`).
    checkpoint: bool = eqx.field(static=True, default=True)

    def __call__(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        return self.checkpointed(x) if self.checkpoint else self.plain(x)

    def plain(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        x = self.linear1(x)  # (D,) -> (F,)
        x = jax.nn.relu(x)
        return self.linear2(x)  # (F,) -> (F,)

    # `filter_checkpoint`, not `jax.checkpoint(model)`: the latter hashes the
    # module and fails under grad. The backward pass keeps this region's
    # inputs (parameters and x) and recomputes the hidden activation.
    @eqx.filter_checkpoint
    def checkpointed(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        return self.plain(x)


def with_checkpoint(model: MLP, checkpoint: bool) -> MLP:
    """The same arrays, run checkpointed (`True`) or plain (`False`)."""
    return dataclasses.replace(model, checkpoint=checkpoint)


# ---------------------------------------------------------------------------
# Converters: canonical layout (kernel (in, out)) <-> Equinox layout (weight (out, in))
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _linear_skeleton(in_features: int, out_features: int) -> eqx.nn.Linear:
    # Equinox's own init is uniform, and we replace both arrays anyway, so
    # build only the structure (shapes, no values) and fill it in `_linear`.
    return eqx.filter_eval_shape(eqx.nn.Linear, in_features, out_features, key=jax.random.key(0))


def _linear(weight: Any, bias: Any) -> eqx.nn.Linear:
    out_features, in_features = weight.shape
    skeleton = _linear_skeleton(in_features, out_features)
    return eqx.tree_at(lambda linear: (linear.weight, linear.bias), skeleton, (weight, bias))


def from_canonical(w1: Any, b1: Any, w2: Any, b2: Any, *, checkpoint: bool = True) -> MLP:
    """An MLP from canonical-layout arrays: numpy, or jax (traced or not).

    **Arguments:**

    - `w1`, `b1`, `w2`, `b2`: kernels `(D, F)`, `(F, F)` and biases `(F,)`.
    - `checkpoint`: whether the model runs its forward pass checkpointed.

    **Returns:** an `MLP` holding float32 jax arrays in Equinox's layout.
    """
    dim, features = w1.shape
    # `.T` of the array as given: free in numpy, traced under jit; either way
    # no eager XLA transpose (compiled once per shape) runs.
    w1, w2 = w1.T, w2.T  # (D, F) -> (F, D); (F, F) -> (F, F)
    assert w1.shape == (features, dim), w1.shape
    assert w2.shape == (features, features), w2.shape
    assert b1.shape == b2.shape == (features,), (b1.shape, b2.shape)
    w1, b1, w2, b2 = (jnp.asarray(a, jnp.float32) for a in (w1, b1, w2, b2))
    return MLP(_linear(w1, b1), _linear(w2, b2), checkpoint)


def params_to_model(params: Params, *, checkpoint: bool = True) -> MLP:
    """Canonical `Params` (kernel `(in, out)`) as an MLP in Equinox's layout (`(out, in)`)."""
    return from_canonical(params.w1, params.b1, params.w2, params.b2, checkpoint=checkpoint)


def model_to_params(model: MLP) -> Params:
    """An MLP, or a gradient shaped like one, as canonical `Params`."""
    w1, w2 = np.asarray(model.linear1.weight).T, np.asarray(model.linear2.weight).T
    b1, b2 = np.asarray(model.linear1.bias), np.asarray(model.linear2.bias)
    features, dim = model.linear1.weight.shape
    assert w1.shape == (dim, features), w1.shape  # (F, D) -> (D, F)
    assert w2.shape == (features, features), w2.shape  # (F, F) -> (F, F)
    return Params(w1=w1, b1=b1, w2=w2, b2=b2)  # Params checks the biases' shapes


# ---------------------------------------------------------------------------
# The exercise
# ---------------------------------------------------------------------------


def nn_checkpoint_forward(seed: Any, x: Any, features: Any) -> jax.Array:
    """The exercise: init the checkpointed MLP as Flax would from `PRNGKey(seed)`, apply it to x.

    **Arguments:**

    - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d
      array), at most `2**63 - 1`. It becomes `jax.random.PRNGKey(seed)`,
      exactly as in Flax, so a seed >= 2**32 keeps its low 32 bits (x32 mode).
    - `x`: a finite real vector of shape `(D,)`. A tracer is fine: its shape
      and dtype are checked, its values cannot be.
    - `features`: the width F, a positive integer-valued scalar.

    **Returns:** the `(F,)` float32 output.

    It is differentiable with respect to x (`jax.grad`, `jax.vjp`) and maps
    over x (`jax.vmap`). Under `jax.jit`, `seed` and `features` pick the
    parameters and the shapes, so they must be static:

    ```python
    fast = jax.jit(nn_checkpoint_forward, static_argnums=(0, 2))
    fast(0, x, 16)
    ```

    Called without an outer jit, it is already compiled: one cached function
    per F (and, in jit's cache, per D) takes the seed as an argument and makes
    the key inside, so a new seed dispatches without tracing again.
    """
    return _exercise(seed, x, features)


# Flax's init and the checkpointed MLP, compiled together once per F (and D).
_exercise = CompiledExercise(lambda arrays, x: from_canonical(*arrays, checkpoint=True)(x))


def _call(model: MLP, x: jax.Array) -> jax.Array:
    return model(x)


# The contract's forward and VJP take canonical arrays and build the model
# inside the trace: building it eagerly (`eqx.tree_at`, array conversions)
# costs more than the compiled call. One compile per shape and path.
@functools.partial(jax.jit, static_argnames="checkpoint")
def _apply(arrays: tuple, x: jax.Array, *, checkpoint: bool) -> jax.Array:
    return from_canonical(*arrays, checkpoint=checkpoint)(x)  # arrays: (w1, b1, w2, b2)


@functools.partial(jax.jit, static_argnames="checkpoint")
def _vjp(arrays: tuple, x: jax.Array, cotangent: jax.Array, *, checkpoint: bool):
    model = from_canonical(*arrays, checkpoint=checkpoint)
    _, pull_back = jax.vjp(_call, model, x)
    return pull_back(cotangent)  # the gradient as an MLP (Equinox's layout), and dx


def _arrays(params: Params) -> tuple[np.ndarray, ...]:
    return tuple(params.as_dict().values())  # (w1, b1, w2, b2), canonical layout


class EquinoxJax(JaxPort):
    """The Equinox port: `eqx.filter_checkpoint`, Flax's init in pure JAX."""

    name = "equinox_jax"
    framework = "equinox"
    distributions = ("jax", "jaxlib", "equinox")

    # Flax's init, reproduced in jax.random (jax_flax_init), checked by the contract.
    init_params = staticmethod(jax_flax_init.init_params)

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        return np.asarray(_apply(_arrays(params), np.asarray(x, np.float32), checkpoint=checkpoint))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        x, cotangent = np.asarray(x, np.float32), np.asarray(cotangent, np.float32)
        grads, dx = _vjp(_arrays(params), x, cotangent, checkpoint=checkpoint)
        return Grads.of(model_to_params(grads), np.asarray(dx))

    def differentiable(self, params: Params, x: np.ndarray, checkpoint: bool):
        model = params_to_model(params, checkpoint=checkpoint)
        return _call, (model, jnp.asarray(x, jnp.float32))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> jax.Array:
        return nn_checkpoint_forward(seed, x, features)
