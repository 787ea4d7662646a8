"""The JAX stack: what every JAX port shares. Imports jax (and numpy); never Flax or torch.

- `JaxPort`: the `Port` base on this stack: subclass it and define
  `to_native(w1, b1, w2, b2)`, `to_canonical(native)` and
  `apply(native, x, checkpoint)`; the base builds the rest (`port`).
- Flax linen's init in `jax.random`: `flax_init(key, D, F)` (traceable),
  `init_params(seed, D, F)` (checked, as `Params`), `init_arrays`,
  `jitted_init`, `seed_array`, `lecun_normal`, and `CompiledExercise(apply)`,
  which turns a checkpointed MLP on canonical arrays into the whole exercise
  (`flax_init`).
- `checked_x`: the contract's checks of x, made to survive tracing (`inputs`).
- JAX's instrument: `backward_record(fn, args, origins, cotangent)` and
  `saved_tensors(fn, args, origins)` (`instrument`).
- `STACK`: the JAX `Stack` (arrays, the precision pin, the init, `record`).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "backward_record": ".instrument",
    "saved_tensors": ".instrument",
    "CompiledExercise": ".flax_init",
    "flax_init": ".flax_init",
    "init_arrays": ".flax_init",
    "init_params": ".flax_init",
    "jitted_init": ".flax_init",
    "lecun_normal": ".flax_init",
    "seed_array": ".flax_init",
    "checked_x": ".inputs",
    "Compiled": ".port",
    "JaxPort": ".port",
    "STACK": ".stack",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
