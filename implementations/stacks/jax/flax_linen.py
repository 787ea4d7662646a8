"""The canonical port: Flax linen, `nn.checkpoint` around the MLP class.

Every other port is held to what this module computes. Flax's parameter
layout is the canonical one (kernel `(in, out)`), so its converters only
rename: `Dense_0/kernel` is `w1`, and so on. Its init is Flax's own.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import flax.linen as nn
import jax
import numpy as np

from implementations.composition import Nesting, case_of
from implementations.contract import Params, check_dim, check_features, check_seed, check_sizes
from implementations.policies import FULL, Policy, as_policy
from implementations.stacks.jax import JaxPort, checked_x
from implementations.stacks.jax import flax_linen_stateful as stateful
from implementations.stacks.jax.policies import front, policy_function, tag
from implementations.stacks.jax.stateful import StatefulFront
from implementations.stateful import DEFAULT_VARIANT, StateStep


class MLP(nn.Module):
    """`Dense(F)` -> relu -> `Dense(F)`: default initializers, biases on, no layer names."""

    features: int

    @nn.compact
    def __call__(self, x):  # (D,) -> (F,)
        x = tag(nn.Dense(self.features)(x))  # named Dense_0 by creation order; h for save_named
        x = nn.relu(x)
        return nn.Dense(self.features)(x)  # Dense_1


# Wrap the class, not an instance: nn.checkpoint(MLP(...)) raises TransformTargetError.
CheckpointMLP = nn.checkpoint(MLP)


@functools.lru_cache(maxsize=32)
def wrapped_again(module: type[nn.Module]) -> type[nn.Module]:
    """`nn.checkpoint(module)`: for composition `twice`, the checkpointed class wrapped again
    (`nn.checkpoint(nn.checkpoint(MLP))`)."""
    return nn.checkpoint(module)


@functools.lru_cache(maxsize=32)
def policy_module(module: type[nn.Module], policy: Policy) -> type[nn.Module]:
    """`nn.checkpoint(module, policy=...)` for a remat policy other than none and full."""
    return nn.checkpoint(module, policy=policy_function(policy))


def init_and_apply(
    module: type[nn.Module], seed: Any, x: Any, features: Any, *, init_module=None
) -> jax.Array:
    """`nn_checkpoint_forward` for any MLP-shaped module class (the mutants swap it).

    `init_module` makes the parameters, when another class than `module` should.
    """
    seed, features, x = check_seed(seed), check_features(features), checked_x(x)
    check_sizes(x.shape[0], features)  # before anything compiles: XLA aborts past int32 sizes
    init = compiled_init(init_module or module, features)
    # init reads only x's shape. Under a trace, stop_gradient says so to
    # autodiff, so that a grad of this function reuses the compiled init
    # instead of compiling its JVP; a concrete x needs no such op dispatched.
    shape_only = jax.lax.stop_gradient(x) if isinstance(x, jax.core.Tracer) else x
    variables = init(jax.random.PRNGKey(seed), shape_only)
    return compiled_apply(module, features)(variables, x).ravel()


# One compiled function per module class and width (and, inside jit's cache,
# per D), so a warm call with a new seed dispatches instead of tracing again.
@functools.lru_cache(maxsize=128)
def compiled_init(module: type[nn.Module], features: int):
    """`module(features).init`, jitted."""
    return jax.jit(module(features=features).init)


@functools.lru_cache(maxsize=128)
def compiled_apply(module: type[nn.Module], features: int):
    """`module(features).apply`, jitted."""
    return jax.jit(module(features=features).apply)


class FlaxLinen(StatefulFront, JaxPort):
    """The canonical port: Flax linen `nn.checkpoint`."""

    name = "flax_linen"
    checkpoint_api = "nn.checkpoint"
    framework = "flax"
    policies, inexpressible, compositions = front(
        "MLP (no nn.checkpoint)",
        "nn.checkpoint(MLP)",
        "nn.checkpoint(MLP, policy=...)",
        twice="nn.checkpoint(nn.checkpoint(MLP))",
        trained="nn.checkpoint(MLP)(F).apply",
    )
    #: The module classes behind `checkpoint=True` and `checkpoint=False`, and
    #: the one that makes the parameters (mutants swap them).
    checkpointed: type[nn.Module] = CheckpointMLP
    plain: type[nn.Module] = MLP
    initializer: type[nn.Module] = CheckpointMLP

    #: The block with variables and RNGs (property (l)): the canonical.
    state_variants: ClassVar[dict[str, str]] = {DEFAULT_VARIANT: "nn.checkpoint(Block)"}
    #: The block's classes behind `checkpoint=True` and `False` (mutants swap them).
    state_checkpointed: type[nn.Module] = stateful.CheckpointBlock
    state_plain: type[nn.Module] = stateful.Block

    def run_state_step(self, seed, x, features, rate, cotangent, checkpoint: bool) -> StateStep:
        """The second exercise: one training step of `nn.checkpoint(Block)` (or Block, for
        `checkpoint=False`) from `seed` (`implementations.stateful`)."""
        module = self.state_checkpointed if checkpoint else self.state_plain
        return stateful.linen_state_step(module, seed, x, features, rate, cotangent)

    def to_native(self, w1, b1, w2, b2) -> dict:
        # The layouts agree; only the names change.
        return {
            "params": {
                "Dense_0": {"kernel": w1, "bias": b1},  # (D, F), (F,)
                "Dense_1": {"kernel": w2, "bias": b2},  # (F, F), (F,)
            }
        }

    def to_canonical(self, variables: dict) -> tuple:
        dense0, dense1 = variables["params"]["Dense_0"], variables["params"]["Dense_1"]
        return dense0["kernel"], dense0["bias"], dense1["kernel"], dense1["bias"]

    def apply(self, variables: dict, x: jax.Array, checkpoint: Policy | Nesting) -> jax.Array:
        if case_of(checkpoint) == "twice":  # the checkpointed class (a mutant's too), again
            module = wrapped_again(self.checkpointed)
            features = variables["params"]["Dense_0"]["kernel"].shape[1]
            return module(features=features).apply(variables, x)
        policy = as_policy(checkpoint)
        if policy == FULL or not policy:
            module = self.checkpointed if policy else self.plain
        else:  # the plain module (a mutant's bug included) under the policy
            module = policy_module(self.plain, policy)
        features = variables["params"]["Dense_0"]["kernel"].shape[1]
        return module(features=features).apply(variables, x)

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # Flax's own init: the definition of the canonical parameters.
        seed, features, dim = check_seed(seed), check_features(features), check_dim(dim)
        check_sizes(dim, features, dim_name="dim")
        init = compiled_init(self.initializer, features)
        variables = init(jax.random.PRNGKey(seed), np.zeros((dim,), np.float32))
        return Params(*(np.asarray(a) for a in self.to_canonical(variables)))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> jax.Array:
        """The exercise: init the checkpointed MLP from `PRNGKey(int(seed))` and x, apply it to x.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
        - `x`: a finite real vector of shape `(D,)`; a jax tracer is fine, so the
          function works under `jit` (with `seed` and `features` static), `grad`
          and `vmap`.
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the flattened `(F,)` float32 output.
        """
        return init_and_apply(self.checkpointed, seed, x, features, init_module=self.initializer)


nn_checkpoint_forward = FlaxLinen.exported()
