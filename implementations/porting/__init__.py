"""The stable API for porters: what a port outside this repository may import.

One module per family, each importing only its own stack:

- `implementations.porting.jax`: `JaxPort` (define `to_native`,
  `to_canonical` and `apply`; the base builds the rest), Flax's init in
  `jax.random`, `checked_x`, and JAX's evidence instrument.
- `implementations.porting.numpy`: Flax's init in numpy, for stacks without
  JAX (`canonical_params`), and how Flax derives its keys.
- `implementations.porting.torch`: torch's evidence instrument and the
  tensor conversions the PyTorch ports use.
- `implementations.porting.mlx`: MLX's evidence instrument (the lazy graph
  of `mx.vjp`) and the array conversions the MLX port uses.

Everything else a port needs is in `implementations.contract` (numpy only).
Modules whose names start with an underscore are private rooms: their
contents may move; these names will not (see docs/PORTING.md).
"""
