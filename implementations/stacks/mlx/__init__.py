"""The MLX stack. Imports mlx (and numpy), never JAX or torch.

- The block: `place(placement)`, the one builder of L blocks, each region `mx.checkpoint`
  (`block`).
- The instrument: `backward_record(fn, args, origins, cotangent, tap)` reads
  what `mx.vjp` keeps and recomputes off its unevaluated graph
  (`mx.export_to_dot`); `Tap` names a model's arrays so that the record can
  give their shapes (the export has none); `Graph` is the parsed export;
  `watch(x, parameters)` and `peak()`, contexts around the very call, giving a
  `Record` (`instrument`).
- Arrays in and out: `as_input(x)` (checked, float32; an `mx.array` under
  `mx.vmap` or `mx.compile` gets its shape and dtype checked only),
  `to_host_array`, `from_host_array` (dtype kept: `mx.array` alone turns
  float64 into float32) (`arrays`).
- Precision: `pin_matmul_precision()` (`MLX_ENABLE_TF32=0`) and `matmul_precision()`.
- `STACK`: the MLX `Stack`.
"""

from ..lazy import arrays_exports, lazy_exports

_EXPORTS = {
    **arrays_exports(),
    "Graph": ".instrument",
    "Tap": ".instrument",
    "backward_record": ".instrument",
    "no_tap": ".instrument",
    "peak": ".instrument",
    "watch": ".instrument",
    "place": ".block",
    "STACK": ".stack",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
