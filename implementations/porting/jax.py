"""The stable API for JAX ports. Imports jax (and numpy), never Flax, Equinox or torch.

- `JaxPort`: subclass it and define `to_native(w1, b1, w2, b2)`,
  `to_canonical(native)` and `apply(native, x, checkpoint)`.
- Flax linen's init in `jax.random`: `flax_init(key, D, F)` (traceable),
  `init_params(seed, D, F)` (checked, as `Params`), `init_arrays`,
  `jitted_init`, `seed_array`, `lecun_normal`, and `CompiledExercise(apply)`,
  which turns a checkpointed MLP on canonical arrays into the whole exercise.
- `checked_x`: the contract's checks of x, made to survive tracing.
- JAX's instrument: `backward_record(fn, args, origins, cotangent)` and
  `saved_tensors(fn, args, origins)`.
"""

from .._jax.evidence import backward_record, saved_tensors
from .._jax.flax_init import (
    CompiledExercise,
    flax_init,
    init_arrays,
    init_params,
    jitted_init,
    lecun_normal,
    seed_array,
)
from .._jax.inputs import checked_x
from .._jax.port import Compiled, JaxPort

__all__ = [
    "Compiled",
    "CompiledExercise",
    "JaxPort",
    "backward_record",
    "checked_x",
    "flax_init",
    "init_arrays",
    "init_params",
    "jitted_init",
    "lecun_normal",
    "saved_tensors",
    "seed_array",
]
