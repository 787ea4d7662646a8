"""Input checks for JAX ports that survive tracing. Imports jax only.

Under `jit`, `grad` or `vmap` x is a tracer: its shape and dtype are checked,
its values cannot be, and it stays differentiable. A concrete x is checked
in full by the contract and copied, so the caller's array is never touched.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...contract import check_x, check_x_spec, check_x_values


def checked_x(x: Any) -> jax.Array | np.ndarray:
    """x as a float32 `(D,)` array, checked as far as its tracing allows.

    A tracer or jax array stays one; anything else becomes the contract's
    fresh numpy copy, which jitted functions take as it is (an eager
    conversion would cost a dispatch per call).
    """
    if isinstance(x, jax.core.Tracer):
        check_x_spec(x.shape, x.dtype)
        return x.astype(jnp.float32)
    if isinstance(x, jax.Array):
        check_x_spec(x.shape, x.dtype)
        check_x_values(np.asarray(x))
        return x.astype(jnp.float32)  # jax arrays are immutable: no copy needed
    return check_x(x)
