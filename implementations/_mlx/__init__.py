"""What MLX ports share. Imports mlx (and numpy); never JAX or torch.

- `arrays`: x checked into an `mx.array`, arrays back to numpy, and the
  float32 matmul precision switch (`MLX_ENABLE_TF32`).
- `evidence`: MLX's instrument for what a backward pass keeps and
  recomputes, read off the lazy graph that `mx.export_to_dot` exports.

Porters import these through `implementations.porting.mlx`, the stable surface.
"""
