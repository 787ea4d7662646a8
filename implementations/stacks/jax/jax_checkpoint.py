"""The plain JAX port: pure functions, `jax.checkpoint` around the block. No Flax, no Equinox.

The parameters are a dict of jax arrays in the canonical layout itself
(`{"w1": (D, F), "b1": (F,), "w2": (F, F), "b2": (F,)}`, kernel `(in, out)`,
as Flax's), so the converters only change the container. The seeded init
is Flax's, reproduced with `jax.random` (`JaxPort.init_params`).
"""

from __future__ import annotations

import functools
from typing import Any

import jax

from implementations.composition import Nesting, case_of
from implementations.contract import PARAM_NAMES
from implementations.policies import FULL, Policy, as_policy
from implementations.stacks.jax import JaxPort
from implementations.stacks.jax.jax_checkpoint_stateful import StatefulBlock
from implementations.stacks.jax.policies import front, policy_function, tag

Tree = dict[str, Any]  # {"w1", "b1", "w2", "b2"} -> array, canonical layout


def block(params: Tree, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
    """`Dense(F)` -> relu -> `Dense(F)` as Flax's Dense computes it: `x @ kernel + bias`."""
    h = tag(x @ params["w1"] + params["b1"])  # (D,) @ (D, F) -> (F,), h for save_named
    h = jax.nn.relu(h)
    return h @ params["w2"] + params["b2"]  # (F,) @ (F, F) -> (F,)


# The backward pass keeps this region's inputs (params and x) and recomputes
# the hidden activation. Plain functions of arrays: jax.checkpoint needs
# nothing static (no module object to hash, unlike `jax.checkpoint(eqx_model)`).
checkpointed_block = jax.checkpoint(block)
# Composition `twice` (property (k)): the same region wrapped again.
twice_checkpointed_block = jax.checkpoint(checkpointed_block)


@functools.lru_cache(maxsize=32)
def policy_block(policy: Policy):
    """`jax.checkpoint(block, policy=...)` for a remat policy other than none and full."""
    return jax.checkpoint(block, policy=policy_function(policy))


def mlp(params: Tree, x: jax.Array, *, checkpoint: bool | Policy | Nesting = True) -> jax.Array:
    """The MLP `(D,) -> (F,)` under a remat policy (`True`: full, `False`: none), or its
    full-remat region wrapped twice (`Nesting("twice")`). Under jit, `checkpoint` is static."""
    if case_of(checkpoint) == "twice":
        return twice_checkpointed_block(params, x)
    policy = as_policy(checkpoint)
    if policy == FULL or not policy:
        return (checkpointed_block if policy else block)(params, x)
    return policy_block(policy)(params, x)


class JaxCheckpoint(StatefulBlock, JaxPort):
    """The plain JAX port: pure functions and `jax.checkpoint`, Flax's init in pure JAX."""

    name = "jax_checkpoint"
    checkpoint_api = "jax.checkpoint"
    framework = "jax"
    policies, inexpressible, compositions = front(
        "block (no jax.checkpoint)",
        "jax.checkpoint(block)",
        "jax.checkpoint(block, policy=...)",
        twice="jax.checkpoint(jax.checkpoint(block))",
        trained="a model that runs jax.checkpoint(block)",
    )

    def to_native(self, w1, b1, w2, b2) -> Tree:
        return dict(zip(PARAM_NAMES, (w1, b1, w2, b2), strict=True))  # the layout is canonical

    def to_canonical(self, tree: Tree) -> tuple:
        return tuple(tree[name] for name in PARAM_NAMES)

    def apply(self, tree: Tree, x: jax.Array, checkpoint: Policy | Nesting) -> jax.Array:
        return mlp(tree, x, checkpoint=checkpoint)


nn_checkpoint_forward = JaxCheckpoint.exported()
