"""The HIPS autograd stack. Imports autograd (and numpy) on first use, never JAX or torch.

- The block: `block`, `checkpointed_block`, `relu` (a primitive whose gradient at 0 is
  Flax's 0), and `place(placement)`, the one builder of L blocks (`block`);
  `checkpoint(fun)`: `autograd.checkpoint`'s recipe with its VJP's trace moved into the
  backward pass (`remat`).
- The instrument: `watch(x, parameters)` and `peak()`, contexts around the very call
  checked, giving a `Record`; `observe(call, x, parameters)` (`instrument`).
- Arrays in and out: `as_input(x)` (checked; a traced x stays a box),
  `to_host_array`, `from_host_array`, `pin_matmul_precision`, `matmul_precision` (`arrays`).
- `STACK`: the autograd `Stack`.
"""

from ..lazy import arrays_exports, lazy_exports

_EXPORTS = {
    **arrays_exports(),
    "observe": ".instrument",
    "peak": ".instrument",
    "watch": ".instrument",
    "checkpointed_block": ".block",
    "place": ".block",
    "relu": ".block",
    "checkpoint": ".remat",
    "STACK": ".stack",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
