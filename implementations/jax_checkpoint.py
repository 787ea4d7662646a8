"""The plain JAX port: pure functions, `jax.checkpoint` around the block. No Flax, no Equinox.

The parameters are a dict of jax arrays in the canonical layout itself
(`{"w1": (D, F), "b1": (F,), "w2": (F, F), "b2": (F,)}`, kernel `(in, out)`,
as Flax's), so the converters only change the container. The seeded init
is Flax's, reproduced with `jax.random` (`JaxPort.init_params`).
"""

from __future__ import annotations

from typing import Any

import jax

from .contract import PARAM_NAMES
from .stacks.jax import JaxPort

Tree = dict[str, Any]  # {"w1", "b1", "w2", "b2"} -> array, canonical layout


def block(params: Tree, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
    """`Dense(F)` -> relu -> `Dense(F)` as Flax's Dense computes it: `x @ kernel + bias`."""
    h = x @ params["w1"] + params["b1"]  # (D,) @ (D, F) -> (F,)
    h = jax.nn.relu(h)
    return h @ params["w2"] + params["b2"]  # (F,) @ (F, F) -> (F,)


# The backward pass keeps this region's inputs (params and x) and recomputes
# the hidden activation. Plain functions of arrays: jax.checkpoint needs
# nothing static (no module object to hash, unlike `jax.checkpoint(eqx_model)`).
checkpointed_block = jax.checkpoint(block)


def mlp(params: Tree, x: jax.Array, *, checkpoint: bool = True) -> jax.Array:  # (D,) -> (F,)
    """The MLP, checkpointed (`True`) or plain (`False`). Under jit, `checkpoint` is static."""
    return (checkpointed_block if checkpoint else block)(params, x)


class JaxCheckpoint(JaxPort):
    """The plain JAX port: pure functions and `jax.checkpoint`, Flax's init in pure JAX."""

    name = "jax_checkpoint"
    extra = "jax"
    checkpoint_api = "jax.checkpoint"
    framework = "jax"

    def to_native(self, w1, b1, w2, b2) -> Tree:
        return dict(zip(PARAM_NAMES, (w1, b1, w2, b2), strict=True))  # the layout is canonical

    def to_canonical(self, tree: Tree) -> tuple:
        return tuple(tree[name] for name in PARAM_NAMES)

    def apply(self, tree: Tree, x: jax.Array, checkpoint: bool) -> jax.Array:
        return mlp(tree, x, checkpoint=checkpoint)


nn_checkpoint_forward = JaxCheckpoint.exported()
