"""The stacks: one package per framework, each holding what every port on it shares.

- `numpy`: Flax linen's init in numpy (for stacks without JAX), the `(out, in)`
  layout torch and MLX share.
- `jax`: `JaxPort`, Flax's init in `jax.random`, JAX's instrument (jaxpr residuals).
- `torch`: `TorchPort`, the torch MLP and its converters, torch's instrument
  (saved-tensor hooks and a dispatch mode); `torch.compiled`, the compiled path's.
- `tensorflow`: TensorFlow imported quietly, Flax's init by XLA, TensorFlow's
  graph instrument.
- `mlx`: MLX's arrays and its instrument (the lazy graph of `mx.vjp`).
- `keras`: Keras on one backend per process, its MLP; a Keras port's stack
  composes Keras with its backend's stack (`keras.on("torch")`).
- `paddle`: Paddle's tensors, its MLP under `recompute`, its instrument
  (saved-tensor hooks, sublayer hooks in backward).
- `mindspore`: MindSpore's tensors (PyNative), its MLP cell under
  `Cell.recompute()`, its instrument (saved-tensor hooks, cell hooks in
  backward), warmed once for its first-call glitch.

Each package defines one `STACK` (a `Stack`: arrays, precision, canonical
init, `record(...)`); `base` defines `Stack` and `Port`, the base of every
port. Importing this package, or `base`, imports no ML framework; importing
`implementations.stacks.<framework>` imports that framework.
"""

from .base import Port, Stack

NAMES = ("numpy", "jax", "torch", "tensorflow", "mlx", "keras")
NAMES += ("paddle", "mindspore")

__all__ = ["NAMES", "Port", "Stack"]
