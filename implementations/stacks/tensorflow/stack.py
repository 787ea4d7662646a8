"""The TensorFlow `Stack`: tensors, the TF32 switch, Flax's init by XLA, the graph instrument.

Imports TensorFlow (quietly, through `runtime`) and numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...contract import BackwardRecord, Params
from ..base import Stack
from . import arrays, evidence, flax_init, runtime
from .runtime import tf


class TensorFlowStack(Stack):
    """TensorFlow: `tensor.numpy()`, `enable_tensor_float_32_execution`, a traced graph."""

    name = "tensorflow"

    def to_numpy(self, array: Any) -> np.ndarray:
        return arrays.to_host_array(array)

    def from_numpy(self, array: np.ndarray) -> tf.Tensor:
        return arrays.from_host_array(array)

    def pin_matmul_precision(self) -> None:
        runtime.pin_matmul_precision()

    def matmul_precision(self) -> dict[str, str]:
        return runtime.matmul_precision()

    def canonical_params(self, seed: Any, dim: int, features: Any) -> Params:
        """Flax's init in TensorFlow ops compiled by XLA (`flax_init`)."""
        return flax_init.canonical_params(seed, dim, features)

    def record(self, forward, args, origins, cotangent, variables=()) -> BackwardRecord:
        """TensorFlow's instrument: `forward(*args)` and its gradient traced in one graph
        (`evidence.backward_record`)."""
        return evidence.backward_record(forward, args, origins, cotangent, variables)

    def versions(self, found: dict[str, str]) -> dict[str, str]:
        # TensorFlow ships as `tensorflow` or `tensorflow-cpu`: keep the one installed.
        return runtime.installed(found)


STACK = TensorFlowStack()
