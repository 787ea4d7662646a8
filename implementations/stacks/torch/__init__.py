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
- The instrument: `STACK.record(run, x)` (see `stack.record`), and its
  parts `record(run_forward, x, regions)`, `RegionCounter` (the
  `context_fn` that counts checkpoint regions) and `classify` (`evidence`);
  the stack's one dispatch-mode counter `Ops`, its observer `Roles`, and
  `SavedTensors` (`instrument`).
- `compiled` (imported on its own: it imports inductor): the compiled
  path's instrument, AOTAutograd's partitioned graphs (`CompiledModule`).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "as_input": ".arrays",
    "from_host_array": ".arrays",
    "leaf_input": ".arrays",
    "matmul_precision": ".arrays",
    "pin_matmul_precision": ".arrays",
    "to_host_array": ".arrays",
    "RegionCounter": ".evidence",
    "classify": ".evidence",
    "record": ".evidence",
    "Ops": ".instrument",
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
