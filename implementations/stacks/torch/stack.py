"""The torch `Stack`: tensors, the precision pin, the numpy init, and torch's instrument.

Imports torch (and numpy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ...contract import BackwardRecord
from ..base import Stack
from ..numpy import canonical_params
from . import arrays, evidence
from .policies import SelectiveCache

#: `run(x, context_fn) -> (output, model)`: a forward pass whose checkpoint takes `context_fn`.
Run = Callable[[torch.Tensor, Callable], tuple[torch.Tensor, torch.nn.Module]]


def record(run: Run, x: Any, cache: SelectiveCache | None = None) -> BackwardRecord:
    """torch's instrument on one forward and backward pass of `run`.

    **Arguments:**

    - `run(x, context_fn) -> (output, model)`: the forward pass. It must
      hand `context_fn` to its `torch.utils.checkpoint` call as
      `context_fn=` (that is how checkpoint regions are counted), and
      return the module whose `parameters()` the pass used.
    - `x`: the input, checked and copied into a leaf tensor that requires grad.
    - `cache`: the selective checkpoint's cache, when `run`'s checkpoint has a
      policy (its `context_fn` must be part of the one `run` passes on).

    The forward pass runs under an outer `saved_tensors_hooks` (what
    autograd keeps), the backward pass, `torch.autograd.grad` of the
    output against x and every parameter that requires grad with a
    cotangent of ones, under a `TorchDispatchMode` (what reruns with
    grad mode on, that is, inside a checkpoint).
    """
    regions = evidence.RegionCounter()
    x = arrays.leaf_input(x)
    return evidence.record(lambda: run(x, regions.context_fn), x, regions, cache)


#: torch: tensors to and from numpy, `set_float32_matmul_precision`, Flax's init in numpy
#: (torch has none of its own to run), saved-tensor hooks (`record(run, x)`, above).
STACK = Stack(
    "torch",
    arrays=arrays,
    precision=arrays,
    init=canonical_params,
    instrument=record,
    distributions=("torch",),
)
