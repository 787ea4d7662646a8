"""The HIPS autograd stack. Imports autograd (and numpy) on first use, never JAX or torch.

- The model: `block`, `checkpointed_block`, `relu` (a primitive whose gradient at 0
  is Flax's 0), `no_tap` (`mlp`); `checkpoint(fun)`: `autograd.checkpoint`'s recipe
  with its VJP's trace moved into the backward pass (`remat`).
- The instrument: `backward_record(fn, args, origins, cotangent, tap)` reads what
  `make_vjp` keeps off its backward graph and profiles the backward pass;
  `Tap` names a model's arrays; `Probe` counts what runs; `reachable_arrays`
  walks the graph (`evidence`).
- Arrays in and out: `as_input(x)` (checked; a traced x stays a box),
  `to_host_array`, `from_host_array`, `pin_matmul_precision`, `matmul_precision` (`arrays`).
- `STACK`: the autograd `Stack`.
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "as_input": ".arrays",
    "from_host_array": ".arrays",
    "matmul_precision": ".arrays",
    "pin_matmul_precision": ".arrays",
    "to_host_array": ".arrays",
    "Probe": ".evidence",
    "Tap": ".evidence",
    "backward_record": ".evidence",
    "reachable_arrays": ".evidence",
    "block": ".mlp",
    "checkpointed_block": ".mlp",
    "no_tap": ".mlp",
    "relu": ".mlp",
    "checkpoint": ".remat",
    "STACK": ".stack",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
