"""The MLX `Stack`. Imports mlx (and numpy).

MLX: arrays to and from numpy (dtype kept), `MLX_ENABLE_TF32`, Flax's init in
numpy (MLX has none of its own to run), and what `mx.vjp(fn, args, [cotangent])`
keeps and recomputes, read off its unevaluated graph
(`record(fn, args, origins, cotangent, tap)`, `instrument.backward_record`).
"""

from __future__ import annotations

from ..base import Stack
from ..numpy import canonical_params
from . import arrays, instrument

STACK = Stack(
    "mlx",
    arrays=arrays,
    precision=arrays,
    init=canonical_params,
    instrument=instrument.backward_record,
    distributions=("mlx", "mlx-cpu"),
)
