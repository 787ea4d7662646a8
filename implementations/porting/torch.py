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

__all__ = [
    "GradModeOps",
    "RegionCounter",
    "SavedTensors",
    "as_input",
    "classify",
    "from_host_array",
    "leaf_input",
    "matmul_precision",
    "pin_matmul_precision",
    "record",
    "to_host_array",
]
