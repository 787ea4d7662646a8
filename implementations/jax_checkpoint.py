"""The plain JAX port: pure functions, `jax.checkpoint` around the block. No Flax, no Equinox.

The parameters are a dict of jax arrays in the canonical layout itself
(`{"w1": (D, F), "b1": (F,), "w2": (F, F), "b2": (F,)}`, kernel `(in, out)`,
as Flax's), so the converters only move between `Params` and that dict. The
seeded init is Flax's, reproduced with `jax.random` in `jax_flax_init`.
Imports jax, numpy and the project's jax-only modules.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import jax_flax_init
from .contract import PARAM_NAMES, Grads, Params
from .jax_flax_init import CompiledExercise, flax_init
from .jax_port import JaxPort

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


# ---------------------------------------------------------------------------
# Converters: the layout is the canonical one; only the container changes
# ---------------------------------------------------------------------------


def params_to_tree(params: Params) -> Tree:
    """Canonical `Params` as the port's dict (numpy arrays: jit takes them as they are)."""
    return params.as_dict()


def tree_to_params(tree: Tree) -> Params:
    """The port's dict, or a gradient shaped like it, as canonical `Params` (shapes checked)."""
    return Params(**{name: np.asarray(tree[name]) for name in PARAM_NAMES})


# ---------------------------------------------------------------------------
# The exercise
# ---------------------------------------------------------------------------


def init(key: jax.Array, dim: int, features: int) -> Tree:
    """Flax's `MLP(features).init(key, x)` for x of width `dim`, as the port's dict."""
    return dict(zip(PARAM_NAMES, flax_init(key, dim, features), strict=True))


def nn_checkpoint_forward(seed: Any, x: Any, features: Any) -> jax.Array:
    """The exercise: init as Flax would from `PRNGKey(seed)`, apply the checkpointed MLP to x.

    **Arguments:**

    - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d
      array), at most `2**63 - 1`; `PRNGKey` keeps its low 32 bits (x32 mode).
    - `x`: a finite real vector of shape `(D,)`. A tracer is fine: its shape
      and dtype are checked, its values cannot be.
    - `features`: the width F, a positive integer-valued scalar.

    **Returns:** the `(F,)` float32 output. It works under `jax.grad` and
    `jax.vmap` (over x), and under `jax.jit` with `seed` and `features` static.
    """
    return _exercise(seed, x, features)


# Flax's init and the checkpointed MLP, compiled together once per F (and D).
_exercise = CompiledExercise(
    lambda arrays, x: mlp(dict(zip(PARAM_NAMES, arrays, strict=True)), x, checkpoint=True)
)


_apply = jax.jit(mlp, static_argnames="checkpoint")


@functools.partial(jax.jit, static_argnames="checkpoint")
def _vjp(params: Tree, x: jax.Array, cotangent: jax.Array, *, checkpoint: bool):
    _, pull_back = jax.vjp(functools.partial(mlp, checkpoint=checkpoint), params, x)
    return pull_back(cotangent)


class JaxCheckpoint(JaxPort):
    """The plain JAX port: pure functions and `jax.checkpoint`, Flax's init in pure JAX."""

    name = "jax_checkpoint"
    framework = "jax"
    distributions = ("jax", "jaxlib")

    # Flax's init, reproduced in jax.random (jax_flax_init), checked by the contract.
    init_params = staticmethod(jax_flax_init.init_params)

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        x = np.asarray(x, np.float32)
        return np.asarray(_apply(params_to_tree(params), x, checkpoint=checkpoint))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        x, cotangent = np.asarray(x, np.float32), np.asarray(cotangent, np.float32)
        grads, dx = _vjp(params_to_tree(params), x, cotangent, checkpoint=checkpoint)
        return Grads.of(tree_to_params(grads), np.asarray(dx))

    def differentiable(self, params: Params, x: np.ndarray, checkpoint: bool):
        tree = jax.tree.map(jnp.asarray, params_to_tree(params))
        return functools.partial(mlp, checkpoint=checkpoint), (tree, jnp.asarray(x, jnp.float32))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> jax.Array:
        return nn_checkpoint_forward(seed, x, features)
