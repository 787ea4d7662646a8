"""Keras 3 on torch: keras.remat (torch.utils.checkpoint, non-reentrant) over Dropout and
BatchNormalization.

Dense -> BatchNormalization -> relu -> Dropout(0.5) -> Dense, batch 8, CPU, eager. torch's
checkpoint stashes torch's own RNG state, not Keras's SeedGenerator (a variable each draw
advances): the recompute draws the next mask, so the gradients differ while the forward is
the same, the generator ends one draw further on, and the moving mean is updated twice.
"""

import os

os.environ["KERAS_BACKEND"] = "torch"
import keras
import numpy as np
import torch

x = torch.tensor(np.random.default_rng(0).normal(size=(8, 4)), dtype=torch.float32)


def step(mode):
    keras.utils.set_random_seed(0)
    norm, drop = keras.layers.BatchNormalization(), keras.layers.Dropout(0.5, seed=0)
    layers = [keras.layers.Dense(4), norm, keras.layers.ReLU(), drop, keras.layers.Dense(4)]
    block = keras.Sequential(layers)
    block.build((8, 4))
    call = keras.remat(lambda x: block(x, training=True)) if mode else block
    y = call(x) if mode else call(x, training=True)
    (y * y).sum().backward()
    grads = [w.value.grad for w in block.trainable_weights]
    return y.detach(), grads, norm.moving_mean.numpy(), int(drop.seed_generator.state.numpy()[1])


(y_off, g_off, m_off, s_off), (y_on, g_on, m_on, s_on) = step(False), step(True)
gap = max((a - b).abs().max() for a, b in zip(g_off, g_on, strict=True))
same, ratio = "equal" if torch.equal(y_off, y_on) else "different", (m_on / m_off).mean()
state = f"moving mean {ratio:.2f} x, seed counter {s_on} (without: {s_off})"
print(f"gradients with checkpoint differ by {gap:.1f}, forward {same}, {state}")
