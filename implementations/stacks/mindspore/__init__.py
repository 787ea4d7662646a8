"""The MindSpore stack (PyNative mode): what a MindSpore port needs. Imports mindspore (and
numpy); never JAX or torch.

- The model: `MLP` (`Cell.recompute()`), `Affine`, `CellPool`, `parameters`,
  `state_to_params`, `exercise_model` (`mlp`).
- Tensors in and out: `as_input`, `to_host_array`, `from_host_array`,
  `pin_matmul_precision`, `matmul_precision` (`arrays`).
- The instrument: `STACK.record(model, x, weights)`: saved-tensor hooks and
  cell hooks (`evidence`).
- `FIRST_CALL`: what the warming call met (`stack`).

MindSpore cannot load after Paddle in one process (MindSpore 2.10.0, Paddle
3.3.1: "undefined symbol: dnnl_threadpool_interop_stream_create", both ship
oneDNN). Where Paddle is loaded already, this package raises
`StackUnavailable` instead: the registry reports the port as loading in a
process of its own. MindSpore first, then Paddle, works.
"""

import sys

from ...contract import StackUnavailable

if sys.modules.get("paddle") is not None and "mindspore" not in sys.modules:
    raise StackUnavailable(
        "MindSpore cannot be imported after Paddle in one process (both ship oneDNN: "
        "undefined symbol dnnl_threadpool_interop_stream_create; MindSpore 2.10.0, "
        "Paddle 3.3.1); it loads in a process of its own"
    )

import mindspore as ms  # after the guard above

from .arrays import (
    as_input,
    from_host_array,
    matmul_precision,
    numpy_dtype,
    pin_matmul_precision,
    to_host_array,
)
from .evidence import CellCalls, SavedTensors, classify, record, run_first_call
from .mlp import MLP, STATE_NAMES, Affine, CellPool, exercise_model, parameters, state_to_params
from .stack import FIRST_CALL, STACK

__all__ = [
    "FIRST_CALL",
    "MLP",
    "STACK",
    "STATE_NAMES",
    "Affine",
    "CellCalls",
    "CellPool",
    "SavedTensors",
    "as_input",
    "classify",
    "exercise_model",
    "from_host_array",
    "matmul_precision",
    "ms",
    "numpy_dtype",
    "parameters",
    "pin_matmul_precision",
    "record",
    "run_first_call",
    "state_to_params",
    "to_host_array",
]
