"""The torch `Stack`: tensors, the precision pin, the numpy init, and torch's instrument.

Imports torch (and numpy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ...contract import BackwardRecord, Params
from ..base import Stack
from ..numpy import canonical_params
from . import arrays, evidence

#: `run(x, context_fn) -> (output, model)`: a forward pass whose checkpoint takes `context_fn`.
Run = Callable[[torch.Tensor, Callable], tuple[torch.Tensor, torch.nn.Module]]


class TorchStack(Stack):
    """torch: tensors to and from numpy, `set_float32_matmul_precision`, saved-tensor hooks."""

    name = "torch"

    def to_numpy(self, array: Any) -> np.ndarray:
        return arrays.to_host_array(array)

    def from_numpy(self, array: np.ndarray) -> torch.Tensor:
        return arrays.from_host_array(array)

    def pin_matmul_precision(self) -> None:
        arrays.pin_matmul_precision()

    def matmul_precision(self) -> dict[str, str]:
        """torch's float32 matmul settings as this process found them, and once pinned."""
        return arrays.matmul_precision()

    def canonical_params(self, seed: Any, dim: int, features: Any) -> Params:
        """Flax's init in numpy: torch has no Flax init of its own to run."""
        return canonical_params(seed, dim, features)

    def record(self, run: Run, x: Any) -> BackwardRecord:
        """torch's instrument on one forward and backward pass of `run`.

        **Arguments:**

        - `run(x, context_fn) -> (output, model)`: the forward pass. It must
          hand `context_fn` to its `torch.utils.checkpoint` call as
          `context_fn=` (that is how checkpoint regions are counted), and
          return the module whose `parameters()` the pass used.
        - `x`: the input, checked and copied into a leaf tensor that requires grad.

        The forward pass runs under an outer `saved_tensors_hooks` (what
        autograd keeps), the backward pass, `torch.autograd.grad` of the
        output against x and every parameter that requires grad with a
        cotangent of ones, under a `TorchDispatchMode` (what reruns with
        grad mode on, that is, inside a checkpoint).
        """
        regions = evidence.RegionCounter()
        x = arrays.leaf_input(x)
        return evidence.record(lambda: run(x, regions.context_fn), x, regions)


STACK = TorchStack()
