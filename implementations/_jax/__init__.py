"""What the JAX ports share. Imports jax (and numpy); never Flax, Equinox or torch.

- `port`: `JaxPort`, the base class: a JAX port declares its model and its
  converters, and the base builds everything else.
- `flax_init`: Flax linen's init in `jax.random` alone, and `CompiledExercise`.
- `inputs`: `checked_x`, the contract's x checks made to survive tracing.
- `evidence`: JAX's instrument for what a backward pass saves and recomputes.

Porters import these through `implementations.porting.jax`, the stable surface.
"""
