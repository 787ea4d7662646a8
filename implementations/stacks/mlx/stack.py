"""The MLX `Stack`: arrays, `MLX_ENABLE_TF32`, the numpy init, the lazy-graph instrument.

Imports mlx (and numpy).
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import numpy as np

from ...contract import BackwardRecord, Params
from ..base import Stack
from ..numpy import canonical_params
from . import arrays, evidence


class MlxStack(Stack):
    """MLX: arrays to and from numpy (dtype kept), `MLX_ENABLE_TF32`, `mx.export_to_dot`."""

    name = "mlx"

    def to_numpy(self, array: Any) -> np.ndarray:
        return arrays.to_host_array(array)

    def from_numpy(self, array: np.ndarray) -> mx.array:
        return arrays.from_host_array(array)

    def pin_matmul_precision(self) -> None:
        arrays.pin_matmul_precision()

    def matmul_precision(self) -> dict[str, str]:
        return arrays.matmul_precision()

    def canonical_params(self, seed: Any, dim: int, features: Any) -> Params:
        """Flax's init in numpy: MLX has no Flax init of its own to run."""
        return canonical_params(seed, dim, features)

    def record(self, fn, args, origins, cotangent, tap=None) -> BackwardRecord:
        """MLX's instrument: what `mx.vjp(fn, args, [cotangent])` keeps and recomputes,
        read off its unevaluated graph (`evidence.backward_record`)."""
        return evidence.backward_record(fn, args, origins, cotangent, tap)


STACK = MlxStack()
