"""The canonical port: Flax linen, `nn.checkpoint` around the MLP class.

Every other port is held to what this module computes. Flax's parameter
layout is the canonical one (kernel `(in, out)`), so its converters only
rename: `Dense_0/kernel` is `w1`, and so on.
"""

from __future__ import annotations

import functools
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from . import jax_evidence
from .contract import Grads, Implementation, Params, check_features, check_seed
from .jax_inputs import checked_x


class MLP(nn.Module):
    """`Dense(F)` -> relu -> `Dense(F)`: default initializers, biases on, no layer names."""

    features: int

    @nn.compact
    def __call__(self, x):  # (D,) -> (F,)
        x = nn.Dense(self.features)(x)  # named Dense_0 by creation order
        x = nn.relu(x)
        return nn.Dense(self.features)(x)  # Dense_1


# Wrap the class, not an instance: nn.checkpoint(MLP(...)) raises TransformTargetError.
CheckpointMLP = nn.checkpoint(MLP)


def nn_checkpoint_forward(seed: Any, x: Any, features: Any) -> jax.Array:
    """The exercise: init the checkpointed MLP from `PRNGKey(int(seed))` and x, apply it to x.

    **Arguments:**

    - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
    - `x`: a finite real vector of shape `(D,)`; a jax tracer is fine, so the
      function works under `jit` (with `seed` and `features` static), `grad`
      and `vmap`.
    - `features`: the width F, a positive integer-valued scalar.

    **Returns:** the flattened `(F,)` float32 output.
    """
    seed, features, x = check_seed(seed), check_features(features), checked_x(x)
    return _init_and_apply(features)(jax.random.PRNGKey(seed), x)


@functools.lru_cache(maxsize=64)
def _init_and_apply(features: int):
    # One compiled init+apply per width (and, inside jit's cache, per D), so a
    # warm call with a new seed dispatches instead of tracing again.
    model = CheckpointMLP(features=features)

    def init_and_apply(key, x):
        variables = model.init(key, x)
        return model.apply(variables, x).ravel()

    return jax.jit(init_and_apply)


def _model(features: int, checkpoint: bool) -> nn.Module:
    return (CheckpointMLP if checkpoint else MLP)(features=features)


@functools.lru_cache(maxsize=64)
def _init(features: int):
    return jax.jit(_model(features, checkpoint=True).init)


@functools.lru_cache(maxsize=128)
def _apply(features: int, checkpoint: bool):
    return jax.jit(_model(features, checkpoint).apply)


@functools.lru_cache(maxsize=128)
def _vjp(features: int, checkpoint: bool):
    apply = _model(features, checkpoint).apply

    def pull_back(variables, x, cotangent):
        _, pullback = jax.vjp(apply, variables, x)
        return pullback(cotangent)

    return jax.jit(pull_back)


def params_to_variables(params: Params) -> dict:
    """Canonical params as a Flax variables tree (the layouts agree; only names change)."""
    return {
        "params": {
            "Dense_0": {"kernel": jnp.asarray(params.w1), "bias": jnp.asarray(params.b1)},
            "Dense_1": {"kernel": jnp.asarray(params.w2), "bias": jnp.asarray(params.b2)},
        }
    }


def variables_to_params(variables: dict) -> Params:
    """A Flax variables tree as canonical params."""
    tree = variables["params"]
    return Params(
        w1=np.asarray(tree["Dense_0"]["kernel"]),
        b1=np.asarray(tree["Dense_0"]["bias"]),
        w2=np.asarray(tree["Dense_1"]["kernel"]),
        b2=np.asarray(tree["Dense_1"]["bias"]),
    )


class FlaxLinen(Implementation):
    """The canonical port: Flax linen `nn.checkpoint`."""

    name = "flax_linen"
    framework = "flax"
    distributions = ("jax", "jaxlib", "flax")

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        seed, features = check_seed(seed), check_features(features)
        key = jax.random.PRNGKey(seed)
        return variables_to_params(_init(features)(key, jnp.zeros((dim,), jnp.float32)))

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        out = _apply(params.features, checkpoint)(params_to_variables(params), jnp.asarray(x))
        return np.asarray(out).ravel()

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        pull_back = _vjp(params.features, checkpoint)
        variables, dx = pull_back(
            params_to_variables(params), jnp.asarray(x), jnp.asarray(cotangent)
        )
        tree = variables_to_params(variables)
        return Grads(w1=tree.w1, b1=tree.b1, w2=tree.w2, b2=tree.b2, x=np.asarray(dx))

    def backward_record(self, params: Params, x: np.ndarray, *, checkpoint: bool = True):
        apply = _model(params.features, checkpoint).apply
        return jax_evidence.backward_record(
            apply,
            (params_to_variables(params), jnp.asarray(x)),
            origins=("parameter", "input"),
            cotangent=jnp.ones((params.features,), jnp.float32),
        )

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any):
        features = check_features(features)
        return jax_evidence.backward_record(
            lambda x: nn_checkpoint_forward(seed, x, features),
            (jnp.asarray(x),),
            origins=("input",),
            cotangent=jnp.ones((features,), jnp.float32),
        )

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> jax.Array:
        return nn_checkpoint_forward(seed, x, features)

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def from_numpy(self, array: np.ndarray) -> jax.Array:
        return jnp.asarray(array)

    def pin_matmul_precision(self) -> None:
        jax.config.update("jax_default_matmul_precision", "highest")
