"""The MindSpore stack (PyNative mode): what a MindSpore port needs. Imports mindspore (and
numpy); never JAX or torch.

- The model: `MLP` (`Cell.recompute()`), `Affine`, `parameters`,
  `state_to_params`, `exercise_model` (`mlp`).
- Tensors in and out: `as_input`, `to_host_array`, `from_host_array`,
  `pin_matmul_precision`, `matmul_precision` (`arrays`).
- The instrument: `STACK.record(model, x, weights)`: saved-tensor hooks and
  cell hooks (`evidence`).
- `FIRST_CALL`: what the warming call met (`stack`).
"""

from .arrays import (
    as_input,
    from_host_array,
    matmul_precision,
    numpy_dtype,
    pin_matmul_precision,
    to_host_array,
)
from .evidence import CellCalls, SavedTensors, classify, record, run_first_call
from .mlp import MLP, STATE_NAMES, Affine, exercise_model, parameters, state_to_params
from .stack import FIRST_CALL, STACK

__all__ = [
    "FIRST_CALL",
    "MLP",
    "STACK",
    "STATE_NAMES",
    "Affine",
    "CellCalls",
    "SavedTensors",
    "as_input",
    "classify",
    "exercise_model",
    "from_host_array",
    "matmul_precision",
    "numpy_dtype",
    "parameters",
    "pin_matmul_precision",
    "record",
    "run_first_call",
    "state_to_params",
    "to_host_array",
]
