"""Keras 3 on JAX: one training step of the block (`stateful`).

On JAX a Keras model runs through `stateless_call` (its variables passed in and the new
non-trainable values, the statistics and the seed state, returned), under `keras.remat`,
that is `jax.checkpoint`: the recompute reads the same seed state, so it draws the forward's
mask, and returns statistics nobody assigns twice. The instrument is the JAX stack's
(`observed_masks`: each `jax.random.bernoulli` draw as it runs, the recompute's too).
Imports jax, Keras and numpy.
"""

from __future__ import annotations

import jax
import keras
import numpy as np

from ...stateful import DEFAULT_VARIANT, StateStep
from ..jax.stateful import UPDATES_UNCOUNTED, make_step, observed_masks
from . import stateful


def _state(values: list, index: int | None):
    return stateful.NO_GENERATOR if index is None else np.asarray(values[index])


def step(
    arrays: dict[str, np.ndarray], seed: int, x: np.ndarray, rate: float, cotangent: np.ndarray,
    *, checkpoint: bool, variant: str = DEFAULT_VARIANT,
) -> StateStep:  # fmt: skip
    """The step of the block from `arrays` through `keras.remat(stateless_call)` (or plain);
    `variant` is its only one, `DEFAULT_VARIANT`."""
    block = stateful.build(arrays, rate, seed)
    names = [v.path for v in block.non_trainable_variables]
    weights = [v.value for v in block.trainable_variables]
    state = [v.value for v in block.non_trainable_variables]
    seed_state = names.index(stateful.seed_state(block).path) if rate else None

    def call(weights, x):
        # Keras adds (F,) biases to (B, F) rows: allow rank promotion where tests refuse it.
        with jax.numpy_rank_promotion("allow"), jax.numpy_dtype_promotion("standard"):
            return block.stateless_call(weights, state, x, training=True)

    region = keras.remat(call) if checkpoint else call
    with observed_masks() as masks:
        y, pullback, new_state = jax.vjp(region, weights, x, has_aux=True)
        grads, gx = pullback(cotangent)
        jax.block_until_ready((y, grads, gx, new_state))
    norm = dict(zip(names, new_state, strict=True))
    mean_path, var_path = (v.path for v in stateful.parts(block)[0].non_trainable_variables)
    return make_step(
        y, dict(zip((*stateful.PARAM_ORDER, "x"), (*grads, gx), strict=True)), masks,
        norm[mean_path], norm[var_path], rate=rate, before=_state(state, seed_state),
        after=_state(new_state, seed_state), updates=UPDATES_UNCOUNTED,
    )  # fmt: skip
