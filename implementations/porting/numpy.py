"""The stable API for ports without JAX: Flax linen's init in numpy. Imports numpy only.

- `canonical_params(seed, D, F)`: the canonical `Params`, equal to Flax
  linen's bit for bit on XLA:CPU (x86-64 with FMA3, aarch64).
- `prng_key(seed)`, `dense_kernel_key(seed, layer)`, `lecun_normal(key, shape)`:
  the steps, for a port that draws its kernels itself.
- `dense_kernel_fold_value(layer)`: the constant Flax folds into `PRNGKey(seed)`
  for the kernel of `Dense_{layer}`.
"""

from .._canonical_init.keys import dense_kernel_fold_value
from .._canonical_init.numpy_init import canonical_params, dense_kernel_key, lecun_normal, prng_key

__all__ = [
    "canonical_params",
    "dense_kernel_fold_value",
    "dense_kernel_key",
    "lecun_normal",
    "prng_key",
]
