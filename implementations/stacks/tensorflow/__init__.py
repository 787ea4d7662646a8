"""The TensorFlow stack (`tensorflow`, `keras_tensorflow`). Imports TensorFlow (and numpy).

- `runtime`: TensorFlow itself, imported with its load-time log lines kept
  out of the output (`tf`), the float32 matmul switch, and `installed`.
- `arrays`: x and the integer arguments checked into tensors, eager or
  symbolic (`as_input`, `integer_argument`), and tensors back to numpy.
- `flax_init`: Flax's init in TensorFlow ops, compiled by XLA.
- `evidence`: TensorFlow's instrument for what a backward pass saves and
  recomputes: a `tf.function` graph of the forward pass and its gradient
  (`backward_record`).
- `STACK`: the TensorFlow `Stack`.

Import TensorFlow from here or `runtime` (`from implementations.stacks.tensorflow import
tf`), so that the first import is the quiet one.
"""

# First, before any submodule: TensorFlow's first import is the quiet one.
from . import runtime  # noqa: I001
from .runtime import installed, tf
from . import evidence, flax_init
from .arrays import as_input, float32_tensor, from_host_array, integer_argument, to_host_array
from .evidence import backward_record
from .stack import STACK

__all__ = [
    "STACK",
    "as_input",
    "backward_record",
    "evidence",
    "flax_init",
    "float32_tensor",
    "from_host_array",
    "installed",
    "integer_argument",
    "runtime",
    "tf",
    "to_host_array",
]
