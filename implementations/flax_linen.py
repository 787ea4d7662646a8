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

from .contract import Grads, Params, check_features, check_seed
from .jax_inputs import checked_x
from .jax_port import JaxPort


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
    return init_and_apply(CheckpointMLP, seed, x, features)


def init_and_apply(
    module: type[nn.Module], seed: Any, x: Any, features: Any, *, init_module=None
) -> jax.Array:
    """`nn_checkpoint_forward` for any MLP-shaped module class (the mutants swap it).

    `init_module` makes the parameters, when another class than `module` should.
    """
    seed, features, x = check_seed(seed), check_features(features), checked_x(x)
    init = _init(init_module or module, features)
    # init reads only x's shape. Under a trace, stop_gradient says so to
    # autodiff, so that a grad of this function reuses the compiled init
    # instead of compiling its JVP; a concrete x needs no such op dispatched.
    shape_only = jax.lax.stop_gradient(x) if isinstance(x, jax.core.Tracer) else x
    variables = init(jax.random.PRNGKey(seed), shape_only)
    return _apply(module, features)(variables, x).ravel()


# One compiled function per module class and width (and, inside jit's cache,
# per D), so a warm call with a new seed dispatches instead of tracing again.
@functools.lru_cache(maxsize=128)
def _init(module: type[nn.Module], features: int):
    return jax.jit(module(features=features).init)


@functools.lru_cache(maxsize=128)
def _apply(module: type[nn.Module], features: int):
    return jax.jit(module(features=features).apply)


@functools.lru_cache(maxsize=128)
def _vjp(module: type[nn.Module], features: int):
    apply = module(features=features).apply

    def pull_back(variables, x, cotangent):
        _, pullback = jax.vjp(apply, variables, x)
        return pullback(cotangent)

    return jax.jit(pull_back)


def params_to_variables(params: Params) -> dict:
    """Canonical params as a Flax variables tree (the layouts agree; only names change).

    The leaves stay numpy: jitted functions take them as they are, and an
    eager `jnp.asarray` would cost a dispatch (and a compile per new shape).
    """
    return {
        "params": {
            "Dense_0": {"kernel": params.w1, "bias": params.b1},
            "Dense_1": {"kernel": params.w2, "bias": params.b2},
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


class FlaxLinen(JaxPort):
    """The canonical port: Flax linen `nn.checkpoint`."""

    name = "flax_linen"
    framework = "flax"
    distributions = ("jax", "jaxlib", "flax")
    #: The module classes behind `checkpoint=True` and `checkpoint=False`, and
    #: the one that makes the parameters (mutants swap them).
    checkpointed: type[nn.Module] = CheckpointMLP
    plain: type[nn.Module] = MLP
    initializer: type[nn.Module] = CheckpointMLP

    def _module(self, checkpoint: bool) -> type[nn.Module]:
        return self.checkpointed if checkpoint else self.plain

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        seed, features = check_seed(seed), check_features(features)
        init = _init(self.initializer, features)
        return variables_to_params(init(jax.random.PRNGKey(seed), jnp.zeros((dim,), jnp.float32)))

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        apply = _apply(self._module(checkpoint), params.features)
        return np.asarray(apply(params_to_variables(params), np.asarray(x, np.float32))).ravel()

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        pull_back = _vjp(self._module(checkpoint), params.features)
        variables, dx = pull_back(
            params_to_variables(params),
            np.asarray(x, np.float32),
            np.asarray(cotangent, np.float32),
        )
        return Grads.of(variables_to_params(variables), np.asarray(dx))

    def differentiable(self, params: Params, x: np.ndarray, checkpoint: bool):
        apply = self._module(checkpoint)(features=params.features).apply
        return apply, (params_to_variables(params), jnp.asarray(x))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> jax.Array:
        return init_and_apply(self.checkpointed, seed, x, features, init_module=self.initializer)
