"""The TensorFlow stack (`tensorflow`, `keras_tensorflow`). Imports TensorFlow (and numpy).

- `runtime`: TensorFlow itself, imported with its load-time log lines kept
  out of the output (`tf`), the float32 matmul switch, and `installed`.
- `arrays`: x and the integer arguments checked into tensors, eager or
  symbolic (`as_input`, `integer_argument`), and tensors back to numpy.
- `flax_init`: Flax's init in TensorFlow ops, compiled by XLA.
- `block`, `instrument`: the exercise's block placed over L blocks, and TensorFlow's
  instrument around the call measured (`watch`, `peak`), and on a traced graph of a
  forward pass and its gradient (`instrument.backward_record`).
- `STACK`: the TensorFlow `Stack`.

Import TensorFlow from here or `runtime` (`from implementations.stacks.tensorflow import
tf`), so that the first import is the quiet one.
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "runtime": ".runtime",
    "installed": ".runtime",
    "tf": ".runtime",
    "block": ".block",
    "instrument": ".instrument",
    "backward_record": ".instrument",
    "flax_init": ".flax_init",
    "as_input": ".arrays",
    "float32_tensor": ".arrays",
    "from_host_array": ".arrays",
    "integer_argument": ".arrays",
    "to_host_array": ".arrays",
    "STACK": ".stack",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
