"""autograd.checkpoint over dropout drawn from numpy's global generator.

Dense -> batch norm -> relu -> Dropout(0.5) -> Dense, batch 8, CPU. autograd.checkpoint's VJP
maker traces the region again while the forward pass runs, so dropout draws a second mask: the
gradients follow that mask, the output the first, and the generator is one draw ahead.
"""

import autograd.numpy as anp
import numpy as np
from autograd import checkpoint, value_and_grad

rng = np.random.default_rng(0)
x, w1, w2 = rng.normal(size=(8, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 4))


def block(w1, w2, x):
    h = anp.dot(x, w1)
    h = anp.maximum((h - anp.mean(h, 0)) / anp.sqrt(anp.var(h, 0) + 1e-5), 0.0)
    return anp.dot(h * (np.random.rand(*h.shape) >= 0.5) / 0.5, w2)  # noqa: NPY002


def step(fn):
    np.random.seed(0)  # noqa: NPY002
    loss, g = value_and_grad(lambda w: anp.sum(fn(w[0], w[1], x) ** 2))((w1, w2))
    return loss, g, np.random.rand()  # noqa: NPY002


(l_off, g_off, next_off), (l_on, g_on, next_on) = step(block), step(checkpoint(block))
gap = max(np.abs(a - b).max() for a, b in zip(g_off, g_on, strict=True))
same, kept = "equal" if l_off == l_on else "different", "kept" if next_off == next_on else "shifted"
print(f"gradients with checkpoint differ by {gap:.1f}, forward {same}, stream {kept}")
