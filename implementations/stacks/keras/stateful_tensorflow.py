"""Keras 3 on TensorFlow: one training step of the block (`stateful`), eagerly.

Variants: `default`, the stateful call under `keras.remat` (`tf.recompute_grad`), as a user
writes it: the recompute draws the seed generator's next mask and assigns the statistics
again; `stateless`, the fix: `keras.remat` over `block.stateless_call`, the new statistics
and seed state assigned once, outside the region. The instrument is the TensorFlow stack's
op callback (each dropout's kept mask; the running mean's assigns). Imports TensorFlow, Keras
and numpy.
"""

from __future__ import annotations

import keras
import numpy as np

from ...stateful import StateStep
from ..tensorflow.runtime import tf
from ..tensorflow.stateful import observed
from . import stateful


def _fingerprint(block) -> bytes:
    state = stateful.seed_state(block)
    return stateful.NO_GENERATOR if state is None else np.asarray(state.numpy()).tobytes()


def step(
    arrays: dict[str, np.ndarray], seed: int, x: np.ndarray, rate: float, cotangent: np.ndarray,
    *, checkpoint: bool, variant: str,
) -> StateStep:  # fmt: skip
    """The step of the block from `arrays` through `keras.remat` (or plain) as `variant` says."""
    block = stateful.build(arrays, rate, seed)
    norm, _ = stateful.parts(block)
    xt, g = tf.constant(x), tf.constant(cotangent)
    before = _fingerprint(block)
    with observed(norm.moving_mean.value) as seen:
        if variant == "stateless":
            y, grads = _stateless(block, xt, g, checkpoint)
        else:
            with tf.GradientTape() as tape:
                tape.watch(xt)

                def call(x):
                    return block(x, training=True)

                y = (keras.remat(call) if checkpoint else call)(xt)
            weights = [v.value for v in block.trainable_variables]
            grads = tape.gradient(y, [*weights, xt], output_gradients=g)
    mask, recomputes = seen.drawn(rate, tuple(y.shape))
    return StateStep(
        y=y.numpy(),
        grads={n: t.numpy() for n, t in zip((*stateful.PARAM_ORDER, "x"), grads, strict=True)},
        mask=mask,
        recompute_masks=recomputes,
        running_mean=norm.moving_mean.numpy(),
        running_var=norm.moving_variance.numpy(),
        updates=seen.updates,
        rng_before=before,
        rng_after=_fingerprint(block),
    )


def _stateless(block, xt, g, checkpoint: bool):
    """`block.stateless_call` under `keras.remat`; the new non-trainable values assigned here,
    outside the region, once."""
    weights = [tf.identity(v.value) for v in block.trainable_variables]
    state = [tf.identity(v.value) for v in block.non_trainable_variables]

    def call(x, *weights):
        y, new_state = block.stateless_call(list(weights), state, x, training=True)
        return (y, *new_state)

    with tf.GradientTape() as tape:
        tape.watch([xt, *weights])
        y, *new_state = (keras.remat(call) if checkpoint else call)(xt, *weights)
    grads = tape.gradient(y, [*weights, xt], output_gradients=g)
    for variable, value in zip(block.non_trainable_variables, new_state, strict=True):
        variable.assign(value)
    return y, grads
