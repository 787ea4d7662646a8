"""The numpy stack: Flax linen's init of the exercise without Flax. Imports numpy only.

- `canonical_params(seed, D, F)`: the canonical `Params`, equal to Flax
  linen's bit for bit on XLA:CPU (x86-64 with FMA3, aarch64) (`init`).
- `prng_key(seed)`, `dense_kernel_key(seed, layer)`, `lecun_normal(key, shape)`:
  the steps, for a port that draws its kernels itself.
- `dense_kernel_fold_value(layer)`: the constant Flax folds into `PRNGKey(seed)`
  for the kernel of `Dense_{layer}` (`keys`, standard library only).
- `out_in`: the `(out, in)` weight layout torch's and MLX's `Linear` share.
- `STACK`: the numpy `Stack`, the init of every stack without JAX.
"""

from ..base import Stack
from . import out_in
from .init import canonical_params, dense_kernel_key, lecun_normal, prng_key
from .keys import dense_kernel_fold_value

#: numpy: arrays are numpy already, and the canonical init is `canonical_params`.
STACK = Stack("numpy", init=canonical_params)

__all__ = [
    "STACK",
    "canonical_params",
    "dense_kernel_fold_value",
    "dense_kernel_key",
    "lecun_normal",
    "out_in",
    "prng_key",
]
