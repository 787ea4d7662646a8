"""What the TensorFlow-engine ports share (`tensorflow`, `keras_tensorflow`). Imports
TensorFlow (and numpy); never JAX or torch.

- `stack`: TensorFlow itself, imported with its load-time log lines kept out
  of the output (`stack.tf`), and the float32 matmul switch.
- `arrays`: x and the integer arguments checked into tensors, eager or symbolic,
  and tensors back to numpy.
- `evidence`: TensorFlow's instrument for what a backward pass saves and
  recomputes: a `tf.function` graph of the forward pass and its gradient.

Import TensorFlow through `stack` (`from implementations._tensorflow.stack import tf`),
so that the first import is the quiet one.
"""

# First, before any submodule: TensorFlow's first import is the quiet one.
from . import stack  # noqa: F401
