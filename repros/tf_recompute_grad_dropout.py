"""tf.recompute_grad over tf.nn.dropout (no op seed): the recompute draws a new mask.

Dense -> batch norm -> relu -> Dropout(0.5) -> Dense, batch 8, CPU, eager. The forward is the
same with the checkpoint on and off; the gradients are not: the backward pass reruns the block
and tf.nn.dropout draws again; tf.nn.experimental.stateless_dropout replays the mask.
"""

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = tf.constant(rng.normal(size=(8, 4)), tf.float32)
w1, w2 = (tf.Variable(rng.normal(size=(4, 4)), dtype=tf.float32) for _ in range(2))


def block(x, dropout=tf.nn.dropout):
    h = x @ w1
    mean, var = tf.nn.moments(h, axes=[0])
    h = tf.nn.relu(tf.nn.batch_normalization(h, mean, var, None, None, 1e-5))
    return dropout(h, rate=0.5) @ w2


def step(fn):
    tf.random.set_seed(0)
    with tf.GradientTape() as tape:
        y = fn(x)
        loss = tf.reduce_sum(y * y)
    return y.numpy(), [g.numpy() for g in tape.gradient(loss, [w1, w2])]


def compare(dropout):
    off, on = (
        step(lambda x: block(x, dropout)),
        step(tf.recompute_grad(lambda x: block(x, dropout))),
    )
    gap = max(np.abs(a - b).max() for a, b in zip(off[1], on[1], strict=True))
    return f"gradients with checkpoint differ by {gap:.1f}, forward " + (
        "equal" if np.allclose(off[0], on[0]) else "different"
    )


stateless = lambda h, rate: tf.nn.experimental.stateless_dropout(h, rate, seed=[1, 2])  # noqa: E731
print(f"{compare(tf.nn.dropout)}; with stateless_dropout: {compare(stateless)}")
