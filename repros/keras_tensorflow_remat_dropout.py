"""Keras 3 on TensorFlow: keras.remat (tf.recompute_grad) over Dropout and BatchNormalization.

Dense -> BatchNormalization -> relu -> Dropout(0.5) -> Dense, batch 8, CPU, eager. Dropout
draws from a SeedGenerator, a variable each draw advances: the recompute in the backward pass
draws the next mask, so the gradients differ while the forward values are the same; the
recompute also updates the moving mean a second time (momentum 0.99: 1.99 x one update).
"""

import os

os.environ["KERAS_BACKEND"] = "tensorflow"
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(8, 4)).astype("float32")
norm, drop = keras.layers.BatchNormalization(), keras.layers.Dropout(0.5, seed=0)
block = keras.Sequential(
    [keras.layers.Dense(4), norm, keras.layers.ReLU(), drop, keras.layers.Dense(4)]
)
block.build((8, 4))
state = [*block.weights, drop.seed_generator.state]
start = [v.numpy() for v in state]


def step(fn):
    for variable, value in zip(state, start, strict=True):
        variable.assign(value)
    with tf.GradientTape() as tape:
        y = fn(x)
        loss = tf.reduce_sum(y * y)
    grads = [g.numpy() for g in tape.gradient(loss, block.trainable_weights)]
    return y.numpy(), grads, norm.moving_mean.numpy()


call = lambda x: block(x, training=True)  # noqa: E731
(y_off, g_off, m_off), (y_on, g_on, m_on) = step(call), step(keras.remat(call))
gap = max(np.abs(a - b).max() for a, b in zip(g_off, g_on, strict=True))
same, ratio = "equal" if np.allclose(y_off, y_on) else "different", (m_on / m_off).mean()
print(f"gradients with checkpoint differ by {gap:.1f}, forward {same}, moving mean {ratio:.2f} x")
