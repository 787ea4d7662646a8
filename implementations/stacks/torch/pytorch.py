"""The PyTorch port: `torch.utils.checkpoint` (non-reentrant) around a two-layer MLP, eager.

The model is the torch stack's `MLP`: `Linear(D, F)` -> relu -> `Linear(F, F)`,
its forward pass under `checkpoint(block, x, use_reentrant=False)`. Its
parameters are Flax's canonical ones, computed without JAX by the numpy
init. torch's `Linear.weight` is `(out, in)`, the canonical kernel
transposed; `params_to_state` and `state_to_params` convert, with shape
checks. `TorchPort` builds the contract on that model, and its evidence
from torch's own instruments (saved-tensor hooks, a dispatch mode,
`context_fn`); this port runs the module eagerly. Imports torch, numpy and
the project's numpy-only modules, never jax.
"""

from __future__ import annotations

from typing import ClassVar

from implementations.stacks.torch import TorchPort
from implementations.stacks.torch.mlp import (  # noqa: F401 - the model and its converters, as this port's names
    MLP,
    STATE_NAMES,
    CanonicalLinear,
    build_mlp,
    params_to_state,
    state_to_params,
)
from implementations.stacks.torch.policies import (
    EAGER_NO_BUDGET,
    EAGER_NO_NAMES,
    EAGER_NO_OFFLOAD,
    SAVE_DOTS,
)
from implementations.stacks.torch.stateful import EAGER_VARIANTS, StatefulTorch


class PyTorch(StatefulTorch, TorchPort):
    """The PyTorch port: `torch.utils.checkpoint(..., use_reentrant=False)` around an MLP."""

    name = "pytorch"
    checkpoint_api = "torch.utils.checkpoint"
    state_runs = EAGER_VARIANTS  # the block with variables and RNGs, eager torch's ways
    policies: ClassVar[dict[str, str]] = {
        "none": "no checkpoint",
        "full": "torch.utils.checkpoint(use_reentrant=False)",
        "save_dots": f"{SAVE_DOTS}, the rest PREFER_RECOMPUTE",
    }
    inexpressible: ClassVar[dict[str, str]] = {
        "save_named": EAGER_NO_NAMES,
        "offload_dots": f"{EAGER_NO_OFFLOAD}: nothing is offloaded",
        "budget": EAGER_NO_BUDGET,
    }
    compositions: ClassVar[dict[str, str]] = {
        "once": "checkpoint(block, x, use_reentrant=False)",
        "twice": "checkpoint(partial(checkpoint, block), x, use_reentrant=False)",
        "under_trainer": "checkpoint(model, x, use_reentrant=False) around a model whose "
        "forward checkpoints its block",
    }


nn_checkpoint_forward = PyTorch.exported()
