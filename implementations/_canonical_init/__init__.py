"""Flax linen's init of the exercise, reproduced without Flax.

- `keys`: how Flax derives each parameter's key (standard library only).
- `numpy_init`: the whole init in numpy, bit for bit as XLA:CPU computes it,
  for stacks without JAX: `canonical_params(seed, D, F)`.

The JAX version, `implementations._jax.flax_init`, uses `keys` too. Porters
import these through `implementations.porting.numpy`, the stable surface.
"""

from .numpy_init import canonical_params

__all__ = ["canonical_params"]
