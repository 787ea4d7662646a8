"""The MLX `Stack`. Imports mlx (and numpy).

MLX: arrays to and from numpy (dtype kept), `MLX_ENABLE_TF32`, Flax's init in
numpy (MLX has none of its own to run), and what `mx.vjp(fn, args, [cotangent])`
keeps and recomputes, read off its unevaluated graph
(`record(fn, args, origins, cotangent, tap)`, `instrument.backward_record`).
"""

from __future__ import annotations

from ..numpy import on_numpy_init
from . import arrays, instrument

STACK = on_numpy_init("mlx", arrays, instrument.backward_record, ("mlx", "mlx-cpu"))
