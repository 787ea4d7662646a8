"""The MLP in autograd: `dot -> add -> relu -> dot -> add` on numpy arrays, canonical layout.

Kernels are `(in, out)` as Flax's, so `x @ w1` needs no transpose; a batch
`(B, D)` works as a vector `(D,)`. Imports autograd and numpy.

- `relu`: a primitive of its own, because `autograd.numpy.maximum`'s VJP splits
  the gradient at a tie (0.5 at `h == 0`) where Flax's relu gives 0, and because
  `np.where`'s VJP fills with float64 zeros (the gradient would leave float32).
- `block(w1, b1, w2, b2, x, tap=no_tap)`: the plain MLP; `checkpointed_block`: the same
  under the deferred `remat.checkpoint`, made once here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp, primitive

from .remat import checkpoint


def no_tap(name: str, value: Any) -> Any:
    """A tap that notes nothing (outside the instrument)."""
    return value


@primitive
def relu(h: np.ndarray) -> np.ndarray:  # (..., F) -> (..., F)
    return np.maximum(h, np.zeros((), h.dtype))


def _relu_vjp(ans: np.ndarray, h: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    # Reads the output a: a > 0 exactly where h > 0, so relu'(0) = 0 as in Flax, and a is
    # kept anyway (dW2 = a^T g). A select, as jax.nn.relu's: g's non-finite values stay out.
    return lambda g: np.where(ans > 0, g, np.zeros((), g.dtype))


defvjp(relu, _relu_vjp)


def block(w1, b1, w2, b2, x, tap: Callable[[str, Any], Any] = no_tap):
    """`relu(x @ w1 + b1) @ w2 + b2`: `(D,) -> (F,)` (or `(B, D) -> (B, F)`).

    `tap(name, value)` notes each intermediate for the evidence instrument.
    """
    d1 = tap("d1", anp.dot(x, w1))  # (D,) @ (D, F) -> (F,)
    h = tap("h", d1 + b1)
    a = tap("a", relu(h))
    return tap("y", anp.dot(a, w2) + b2)  # (F,) @ (F, F) -> (F,)


#: The block under the deferred checkpoint: keeps its five inputs, reruns itself in backward.
checkpointed_block = checkpoint(block)
