"""The Equinox port: an `eqx.Module` MLP, checkpointed with `eqx.filter_checkpoint`.

Equinox's own layout is kept: an `eqx.nn.Linear` weight is `(out, in)`, the
transpose of the canonical (Flax) kernel; `to_native` and `to_canonical`
convert, with shape asserts. `eqx.nn.Linear`'s own init (uniform, non-zero
bias) is not Flax's, so the parameters are Flax's, reproduced with
`jax.random` (`JaxPort.init_params`). Never imports flax.
"""

from __future__ import annotations

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from implementations.composition import Nesting, case_of
from implementations.policies import FULL, Policy, as_policy
from implementations.stacks.jax import JaxPort
from implementations.stacks.jax.equinox_stateful import EquinoxStatefulBlock
from implementations.stacks.jax.layers import TwoLayers
from implementations.stacks.jax.policies import front, policy_function


class MLP(eqx.Module, TwoLayers):
    """`Linear(D, F)` -> relu -> `Linear(F, F)`, run checkpointed or plain."""

    linear1: eqx.nn.Linear  # weight (F, D), bias (F,)
    linear2: eqx.nn.Linear  # weight (F, F), bias (F,)

    # `filter_checkpoint`, not `jax.checkpoint(model)`: the latter hashes the
    # module and fails under grad. The backward pass keeps this region's
    # inputs (parameters and x) and recomputes the hidden activation.
    @eqx.filter_checkpoint
    def checkpointed(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        return self.plain(x)


# Composition `twice` (property (k)): the checkpointed method wrapped again, called as
# `(model, x)`.
twice_checkpointed = eqx.filter_checkpoint(MLP.checkpointed)


@functools.lru_cache(maxsize=32)
def policy_call(policy: Policy):
    """`eqx.filter_checkpoint(MLP.plain, policy=...)`, called as `(model, x)`, for a policy
    other than none and full."""
    return eqx.filter_checkpoint(MLP.plain, policy=policy_function(policy))


@functools.lru_cache(maxsize=256)
def _linear_skeleton(in_features: int, out_features: int) -> eqx.nn.Linear:
    # Both arrays are replaced, so build only the structure (shapes, no values).
    return eqx.filter_eval_shape(eqx.nn.Linear, in_features, out_features, key=jax.random.key(0))


def _linear(weight: Any, bias: Any) -> eqx.nn.Linear:
    out_features, in_features = weight.shape
    skeleton = _linear_skeleton(in_features, out_features)
    return eqx.tree_at(lambda linear: (linear.weight, linear.bias), skeleton, (weight, bias))


class EquinoxJax(EquinoxStatefulBlock, JaxPort):
    """The Equinox port: `eqx.filter_checkpoint`, Flax's init in pure JAX."""

    name = "equinox_jax"
    checkpoint_api = "eqx.filter_checkpoint"
    framework = "equinox"
    policies, inexpressible, compositions = front(
        "model.plain (no filter_checkpoint)",
        "eqx.filter_checkpoint",
        "eqx.filter_checkpoint(MLP.plain, policy=...)",
        twice="eqx.filter_checkpoint(eqx.filter_checkpoint(MLP.plain))",
        trained="a model whose call is filter_checkpoint'ed",
    )
    # Drawn (out, in) in the exercise: at D = F = 1024 XLA:CPU took twice as
    # long on a drawn kernel transposed as on one drawn in place.
    kernel_layout = "out_in"

    def to_native(self, w1, b1, w2, b2) -> MLP:
        dim, features = w1.shape
        # `.T` of the array as given: free in numpy, traced under jit.
        w1, w2 = w1.T, w2.T  # (D, F) -> (F, D); (F, F) -> (F, F) transposed
        assert w1.shape == (features, dim), w1.shape
        assert w2.shape == (features, features), w2.shape
        assert b1.shape == b2.shape == (features,), (b1.shape, b2.shape)
        w1, b1, w2, b2 = (jnp.asarray(a, jnp.float32) for a in (w1, b1, w2, b2))
        return MLP(_linear(w1, b1), _linear(w2, b2))

    def to_canonical(self, model: MLP) -> tuple:
        w1, w2 = model.linear1.weight.T, model.linear2.weight.T  # (F, D) -> (D, F); (F, F)
        features, dim = model.linear1.weight.shape
        assert w1.shape == (dim, features), w1.shape
        assert w2.shape == (features, features), w2.shape
        return w1, model.linear1.bias, w2, model.linear2.bias

    def apply(self, model: MLP, x: jax.Array, checkpoint: Policy | Nesting) -> jax.Array:
        if case_of(checkpoint) == "twice":
            return twice_checkpointed(model, x)
        policy = as_policy(checkpoint)
        if policy == FULL or not policy:
            return model.checkpointed(x) if policy else model.plain(x)
        return policy_call(policy)(model, x)


nn_checkpoint_forward = EquinoxJax.exported()
