"""The Paddle stack: what a Paddle port needs. Imports paddle (and numpy); never JAX or torch.

- The model: `MLP` (its forward under `paddle.distributed.fleet.utils.recompute`),
  `LayerPool`, `state_to_params`, `grads_of`, `exercise_model` (`mlp`).
- Tensors in and out: `as_input`, `leaf_input`, `to_host_array`,
  `from_host_array`, `pin_matmul_precision`, `matmul_precision` (`arrays`).
- The block: `block`, and `place(placement)`, the one builder of L blocks, each region
  `fleet.utils.recompute` (`block`).
- The instrument: `watch(x, parameters)` and `peak()`, contexts around the very call checked,
  giving a `Record`; `observe(call, x, parameters)` on a port's own call, behind
  `STACK.record` (`instrument`).

Importing Paddle after TensorFlow in one process segfaults (Paddle 3.3.1,
TensorFlow 2.21). So where TensorFlow is loaded already, importing it (`loaded`) raises
`StackUnavailable` instead of importing Paddle: the registry then reports
the port as loading in a process of its own (the suite runs every port in a
worker of its own anyway), and `python -m conformance list` survives.
"""

from ..lazy import arrays_exports, lazy_exports

_EXPORTS = {
    **arrays_exports("leaf_input"),
    "place": ".block",
    "observe": ".instrument",
    "peak": ".instrument",
    "watch": ".instrument",
    "MLP": ".mlp",
    "STATE_NAMES": ".mlp",
    "LayerPool": ".mlp",
    "exercise_model": ".mlp",
    "grads_of": ".mlp",
    "state_to_params": ".mlp",
    "STACK": ".stack",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
