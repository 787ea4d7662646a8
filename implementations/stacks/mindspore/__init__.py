"""The MindSpore stack (PyNative mode): what a MindSpore port needs. Imports mindspore (and
numpy); never JAX or torch.

- The model: `MLP` (`Cell.recompute()`), `Affine`, `CellPool`, `parameters`,
  `state_to_params`, `exercise_model` (`mlp`).
- Tensors in and out: `as_input`, `to_host_array`, `from_host_array`,
  `pin_matmul_precision`, `matmul_precision` (`arrays`).
- The measurements: the block and its one builder (`block`), the instrument around the very
  call checked (`instrument`; `STACK.record(call, x, parameters)` on a port's own call);
  `classify`, saved tensors by storage (`instrument`).
- `FIRST_CALL`: what the warming call met (`stack`).

MindSpore cannot load after Paddle in one process (MindSpore 2.10.0, Paddle
3.3.1: "undefined symbol: dnnl_threadpool_interop_stream_create", both ship
oneDNN). Where Paddle is loaded already, importing it (`loaded`) raises
`StackUnavailable` instead: the registry reports the port as loading in a
process of its own. MindSpore first, then Paddle, works.
"""

from ..lazy import arrays_exports, lazy_exports

_EXPORTS = {
    **arrays_exports("numpy_dtype"),
    "ms": ".loaded",
    "classify": ".instrument",
    "run_first_call": ".stack",
    "MLP": ".mlp",
    "STATE_NAMES": ".mlp",
    "Affine": ".mlp",
    "CellPool": ".mlp",
    "exercise_model": ".mlp",
    "parameters": ".mlp",
    "state_to_params": ".mlp",
    "FIRST_CALL": ".stack",
    "STACK": ".stack",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
