"""The torch stack: what every torch port shares. Imports torch (and numpy); never JAX.

- `TorchPort`: the `Port` base on this stack, the contract built on a
  port's `run(model, x)` (eager: the module's call), with torch's
  instrument for both records (`port`).
- The model: `MLP` (its forward under `torch.utils.checkpoint`),
  `build_mlp(params)`, the converters `params_to_state` and
  `state_to_params` (`mlp`).
- Tensors in and out: `as_input(x)` (checked, float32, a tensor keeps its
  device and graph), `leaf_input(x)` (a copy that requires grad),
  `to_host_array`, `from_host_array`, `pin_matmul_precision()` and
  `matmul_precision()` (torch's setting as found before the pin, and now)
  (`arrays`).
- The instrument: `watch(x, parameters)` and `peak()` around the block's call,
  `observe(call, x)` around a port's own, `active()` (the watch a model hands
  its checkpoint's `context_fn` from), `RegionCounter`, the stack's one
  dispatch-mode counter `Ops`, its observer `Roles`, and `SavedTensors`
  (`instrument`); `STACK.record(run, x)` on a model built for the record, and
  its parts `model_record(run_forward, x, regions)` and `classify` (`stack`).
- `compiled` (imported on its own: it imports inductor): the compiled
  path's instrument, AOTAutograd's partitioned graphs (`CompiledModule`).
"""

from ..lazy import arrays_exports, lazy_exports

_EXPORTS = {
    **arrays_exports("leaf_input"),
    "RegionCounter": ".instrument",
    "classify": ".stack",
    "model_record": ".stack",
    "Ops": ".instrument",
    "active": ".instrument",
    "observe": ".instrument",
    "Roles": ".instrument",
    "SavedTensors": ".instrument",
    "MLP": ".mlp",
    "build_mlp": ".mlp",
    "params_to_state": ".mlp",
    "state_to_params": ".mlp",
    "TorchPort": ".port",
    "STACK": ".stack",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
