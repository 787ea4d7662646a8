"""mlx.nn.utils.checkpoint over nn.Dropout and nn.BatchNorm (MLX's global random key, CPU).

Dense -> BatchNorm -> relu -> Dropout(0.5) -> Dense, batch 8. The checkpoint calls the module
again in the backward pass: Dropout draws a new mask from the global key (the gradients
differ while the forward values are the same, and the key is one draw ahead) and BatchNorm
updates its running mean a second time (momentum 0.1: 1.90 x one update).
"""

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx.utils import tree_flatten

x = mx.array(np.random.default_rng(0).normal(size=(8, 4)).astype("float32"))
mx.random.seed(0)
block = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm(4), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4, 4))
start = tree_flatten(block.parameters())


def step(fn):
    block.load_weights(start)
    mx.random.seed(1)
    (_, y), g = nn.value_and_grad(block, lambda x: (lambda y: ((y * y).sum(), y))(fn(x)))(x)
    mx.eval(y, g)
    grads = [np.array(v) for _, v in tree_flatten(g)]
    return np.array(y), grads, np.array(block.layers[1].running_mean), np.array(mx.random.state[0])


off, on = step(block), step(nn.utils.checkpoint(block))
gap = max(np.abs(a - b).max() for a, b in zip(off[1], on[1], strict=True))
forward = "equal" if np.allclose(off[0], on[0]) else "different"
key = "kept" if (off[3] == on[3]).all() else "moved"
ratio = (on[2] / off[2]).mean()
print(
    f"gradients with checkpoint differ by {gap:.1f}, forward {forward}, "
    f"running mean {ratio:.2f} x one update, key {key}"
)
