"""The Paddle stack: what a Paddle port needs. Imports paddle (and numpy); never JAX or torch.

- The model: `MLP` (its forward under `paddle.distributed.fleet.utils.recompute`),
  `LayerPool`, `state_to_params`, `grads_of`, `exercise_model` (`mlp`).
- Tensors in and out: `as_input`, `leaf_input`, `to_host_array`,
  `from_host_array`, `pin_matmul_precision`, `matmul_precision` (`arrays`).
- The instrument: `STACK.record(model, run_forward, x)`: saved-tensor hooks and
  sublayer hooks (`evidence`).

Importing Paddle after TensorFlow in one process segfaults (Paddle 3.3.1,
TensorFlow 2.21). So where TensorFlow is loaded already, this package raises
`StackUnavailable` instead of importing Paddle: the registry then reports
the port as loading in a process of its own (the suite runs every port in a
worker of its own anyway), and `python -m conformance list` survives.
"""

import sys
import warnings

from ...contract import StackUnavailable

if sys.modules.get("tensorflow") is not None and "paddle" not in sys.modules:
    raise StackUnavailable(
        "Paddle cannot be imported after TensorFlow in one process (it segfaults: "
        "Paddle 3.3.1, TensorFlow 2.21); it loads in a process of its own"
    )

with warnings.catch_warnings():
    # Paddle warns at import that no ccache is installed (for its C++ extension builder).
    warnings.filterwarnings("ignore", "No ccache found", UserWarning)
    import paddle  # noqa: F401

from .arrays import (
    as_input,
    from_host_array,
    leaf_input,
    matmul_precision,
    pin_matmul_precision,
    to_host_array,
)
from .evidence import LayerCalls, SavedTensors, classify, record
from .mlp import MLP, STATE_NAMES, LayerPool, exercise_model, grads_of, state_to_params
from .stack import STACK

__all__ = [
    "MLP",
    "STACK",
    "STATE_NAMES",
    "LayerCalls",
    "LayerPool",
    "SavedTensors",
    "as_input",
    "classify",
    "exercise_model",
    "from_host_array",
    "grads_of",
    "leaf_input",
    "matmul_precision",
    "pin_matmul_precision",
    "record",
    "state_to_params",
    "to_host_array",
]
