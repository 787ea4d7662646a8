"""mx.checkpoint and mlx.nn.utils.checkpoint over nn.Dropout, which draws from mlx's global key.

Dense -> BatchNorm -> relu -> Dropout(0.5) -> Dense, batch 8, CPU. Both rerun the block in the
backward pass, where Dropout draws a new mask: the gradients differ while the forward values
are the same. nn.utils.checkpoint also moves the running mean and the global key.
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


def compare(name, on, off):
    gap = max(np.abs(a - b).max() for a, b in zip(off[1], on[1], strict=True))
    same = ["equal" if np.allclose(off[i], on[i]) else "different" for i in (0, 2)]
    key = "kept" if (off[3] == on[3]).all() else "moved"
    stats = f"running mean {same[1]}, key {key}"
    return f"{name}: gradients differ by {gap:.1f}, forward {same[0]}, {stats}"


off = step(block)
on = {"mx.checkpoint": mx.checkpoint(block), "nn.utils.checkpoint": nn.utils.checkpoint(block)}
print("; ".join(compare(name, step(fn), off) for name, fn in on.items()))
