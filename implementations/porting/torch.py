"""The stable API for torch ports. Imports torch (and numpy), never JAX.

- The instrument: `record(run_forward, x, regions)` runs a forward pass
  under an outer `saved_tensors_hooks` and its backward pass under a
  `TorchDispatchMode`, and returns a `BackwardRecord`; `RegionCounter` is
  the `context_fn` that counts checkpoint regions; `SavedTensors`,
  `GradModeOps` and `classify` are its parts.
- Tensors in and out: `as_input(x)` (checked, float32, a tensor keeps its
  device and graph), `leaf_input(x)` (a copy that requires grad),
  `to_host_array`, `from_host_array`, `pin_matmul_precision()` and
  `matmul_precision()` (torch's setting as found before the pin, and now).
- The model: `MLP` (its forward under `torch.utils.checkpoint`),
  `build_mlp(params)`, the converters `params_to_state` and
  `state_to_params`, and `TorchPort`, the contract built on a port's
  `run(model, x)` (eager: the module's call); a port adds its evidence.

The compiled port's instrument (AOTAutograd's partitioned graphs) is in
`implementations._torch.compiled`; it imports inductor, so it is not here.
"""

from .._torch.arrays import (
    as_input,
    from_host_array,
    leaf_input,
    matmul_precision,
    pin_matmul_precision,
    to_host_array,
)
from .._torch.evidence import GradModeOps, RegionCounter, SavedTensors, classify, record
from .._torch.mlp import MLP, build_mlp, params_to_state, state_to_params
from .._torch.port import TorchPort

__all__ = [
    "MLP",
    "GradModeOps",
    "RegionCounter",
    "SavedTensors",
    "TorchPort",
    "as_input",
    "build_mlp",
    "classify",
    "from_host_array",
    "leaf_input",
    "matmul_precision",
    "params_to_state",
    "pin_matmul_precision",
    "record",
    "state_to_params",
    "to_host_array",
]
