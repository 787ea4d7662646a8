"""The block with variables and RNGs in Keras 3 (`implementations.stateful`, property (l)).

Block = `Dense(F) -> BatchNormalization(momentum=0.99, epsilon=1e-5) -> ReLU ->
Dropout(rate, seed=seed mod 2**32) -> Dense(F)`, a `keras.Sequential` called with
`training=True`. Keras's momentum is Flax's convention (the old value kept) and its moving
variance takes the biased batch variance; only epsilon (Keras's 1e-3) is set to the
canonical 1e-5. `Dropout` draws from a `keras.random.SeedGenerator`, a variable whose state
each draw advances. The region is `keras.remat(call)`: `tf.recompute_grad` on TensorFlow,
`jax.checkpoint` on JAX.

Two ways to call it, as Keras offers them:

- stateful: `block(x, training=True)`, the variables assigned as the layers run (TensorFlow,
  torch); the recompute runs them again.
- stateless: `block.stateless_call(trainable, non_trainable, x, training=True)`, which
  returns the new non-trainable values (the statistics and the seed state) for the caller to
  assign; the recompute reads the same seed state (JAX's only way; on TensorFlow, the fix).

Import it after `keras_stack.on(backend)`. Imports Keras and numpy.
"""

from __future__ import annotations

import keras
import numpy as np

from ...stateful import EPSILON, MOMENTUM

#: Keras's SeedGenerator keeps its seed in a uint32 on JAX: the block's seed is taken modulo.
SEED_RANGE = 2**32
#: The layers holding the block's parameters, by canonical name, in `trainable_variables` order.
PARAM_ORDER = ("w1", "b1", "gamma", "beta", "w2", "b2")


def build(arrays: dict[str, np.ndarray], rate: float, seed: int) -> keras.Sequential:
    """The block holding `arrays` (`stateful_port.initial`), built for `(B, D)` inputs;
    no layer is a remat region of its own (`RematScope(mode=None)`)."""
    dim, features = arrays["w1"].shape
    with keras.RematScope(mode=None):
        block = keras.Sequential(
            [
                keras.layers.Dense(features, dtype="float32"),
                keras.layers.BatchNormalization(
                    momentum=MOMENTUM, epsilon=EPSILON, dtype="float32"
                ),
                keras.layers.ReLU(dtype="float32"),
                keras.layers.Dropout(rate, seed=seed % SEED_RANGE, dtype="float32"),
                keras.layers.Dense(features, dtype="float32"),
            ]
        )
    block.build((None, dim))
    dense_0, norm, _, _, dense_1 = block.layers
    dense_0.set_weights([arrays["w1"], arrays["b1"]])
    norm.set_weights([arrays["gamma"], arrays["beta"], arrays["mean"], arrays["var"]])
    dense_1.set_weights([arrays["w2"], arrays["b2"]])
    return block


def parts(block: keras.Sequential):
    """`(norm, dropout)`: the layers whose state (l) reads."""
    return block.layers[1], block.layers[3]


def seed_state(block: keras.Sequential):
    """The dropout's seed generator's state variable (at rate 0 Keras makes none: None)."""
    generator = getattr(parts(block)[1], "seed_generator", None)
    return None if generator is None else generator.state


#: The RNG state where Keras made no seed generator: Dropout(0) draws nothing, so there is no
#: state to move; empty, the same before and after.
NO_GENERATOR = b""
