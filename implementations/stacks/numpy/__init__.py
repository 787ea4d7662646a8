"""The numpy stack: Flax linen's init of the exercise without Flax. Imports numpy only.

- `canonical_params(seed, D, F)`: the canonical `Params`, equal to Flax
  linen's bit for bit on XLA:CPU (x86-64 with FMA3, aarch64) (`init`).
- `prng_key(seed)`, `dense_kernel_key(seed, layer)`, `lecun_normal(key, shape)`:
  the steps, for a port that draws its kernels itself.
- `dense_kernel_fold_value(layer)`: the constant Flax folds into `PRNGKey(seed)`
  for the kernel of `Dense_{layer}` (`keys`, standard library only).
- `out_in`: the `(out, in)` weight layout torch's and MLX's `Linear` share.
- `STACK`: the numpy `Stack`, the init of every stack without JAX.
- `on_numpy_init(name, arrays, instrument, distributions)`: the `Stack` of a framework
  whose init is this one and whose `arrays` module also pins and reports its precision.
"""

from collections.abc import Callable
from types import ModuleType

from ..base import Stack
from . import out_in
from .init import canonical_params, dense_kernel_key, lecun_normal, prng_key
from .keys import dense_kernel_fold_value

#: numpy: arrays are numpy already, and the canonical init is `canonical_params`.
STACK = Stack("numpy", init=canonical_params)


def on_numpy_init(
    name: str, arrays: ModuleType, instrument: Callable, distributions: tuple[str, ...]
) -> Stack:
    """`name`'s `Stack`: the numpy init, `arrays` for the arrays and the matmul precision
    (MLX, MindSpore, Paddle, autograd and torch declare theirs so)."""
    return Stack(
        name,
        arrays=arrays,
        precision=arrays,
        init=canonical_params,
        instrument=instrument,
        distributions=distributions,
    )


__all__ = [
    "STACK",
    "canonical_params",
    "dense_kernel_fold_value",
    "dense_kernel_key",
    "lecun_normal",
    "on_numpy_init",
    "out_in",
    "prng_key",
]
