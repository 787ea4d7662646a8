"""The PyTorch port: `torch.utils.checkpoint` (non-reentrant) around a two-layer MLP, eager.

The model is `_torch.mlp.MLP`: `Linear(D, F)` -> relu -> `Linear(F, F)`, its
forward pass under `checkpoint(block, x, use_reentrant=False)`. Its
parameters are Flax's canonical ones, computed without JAX by the numpy
init (`_canonical_init`). torch's `Linear.weight` is `(out, in)`, the
canonical kernel transposed; `params_to_state` and `state_to_params`
convert, with shape checks. `TorchPort` builds the contract on that model;
this port runs it eagerly, and its evidence comes from torch's own
instruments (`_torch.evidence`: saved-tensor hooks, a dispatch mode,
`context_fn`). Imports torch, numpy and the project's numpy-only modules,
never jax.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._torch import evidence
from ._torch.arrays import leaf_input
from ._torch.mlp import (  # noqa: F401 - the model and its converters, as this port's names
    MLP,
    STATE_NAMES,
    CanonicalLinear,
    build_mlp,
    params_to_state,
    state_to_params,
)
from ._torch.port import TorchPort
from .contract import BackwardRecord, Params


class PyTorch(TorchPort):
    """The PyTorch port: `torch.utils.checkpoint(..., use_reentrant=False)` around an MLP."""

    name = "pytorch"

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        regions = evidence.RegionCounter()
        model = build_mlp(params, checkpoint=checkpoint, context_fn=regions.context_fn)
        x = leaf_input(x)
        return evidence.record(lambda: (model(x), model), x, regions)

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        regions = evidence.RegionCounter()
        x = leaf_input(x)
        return evidence.record(
            lambda: self.exercise(seed, x, features, context_fn=regions.context_fn), x, regions
        )


_port = PyTorch()


def nn_checkpoint_forward(seed: Any, x: Any, features: Any) -> torch.Tensor:
    """The exercise: Flax's canonical MLP for `PRNGKey(seed)`, applied to x through a checkpoint.

    **Arguments:**

    - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
    - `x`: a finite real vector of shape `(D,)`: a tensor on any device, a
      numpy array or a list. It is never modified, and gradients flow back
      to it when it requires grad.
    - `features`: the width F, a positive integer-valued scalar.

    **Returns:** the `(F,)` float32 output, on x's device (the CPU for non-tensors).
    """
    return _port.nn_checkpoint_forward(seed, x, features)
