"""The TensorFlow `Stack`. Imports TensorFlow (quietly, through `runtime`) and numpy.

TensorFlow: `tensor.numpy()`, `enable_tensor_float_32_execution`, Flax's init
in TensorFlow ops compiled by XLA (`flax_init`), `forward(*args)` and its
gradient traced in one graph (`record(forward, args, origins, cotangent,
variables=())`, `instrument.backward_record`), and whichever of `tensorflow`
and `tensorflow-cpu` is installed (`runtime.installed`).
"""

from __future__ import annotations

from ..base import Stack
from . import arrays, flax_init, instrument, runtime

STACK = Stack(
    "tensorflow",
    arrays=arrays,
    precision=runtime,
    init=flax_init.canonical_params,
    instrument=instrument.backward_record,
    installed=runtime.installed,
    # The CPU wheel is its own distribution; `versions` reports whichever is installed.
    distributions=("tensorflow-cpu", "tensorflow"),
)
