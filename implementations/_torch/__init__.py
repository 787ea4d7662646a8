"""What the torch ports share. Imports torch (and numpy); never JAX.

- `arrays`: x checked into a tensor, and tensors back to numpy.
- `evidence`: torch's instrument for what a backward pass saves (an outer
  `saved_tensors_hooks`) and recomputes (a `TorchDispatchMode`), and the
  classifier that tells inputs, parameters and activations apart.

Porters import these through `implementations.porting.torch`, the stable surface.
"""
