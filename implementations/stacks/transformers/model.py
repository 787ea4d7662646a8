"""The exercise's MLP as a transformers model: a `PretrainedConfig`, a `PreTrainedModel` and
the block as a `GradientCheckpointingLayer` (`Linear(D, F)` -> relu -> `Linear(F, F)`).
Imports torch and transformers.

Flax's parameters are loaded in as the torch stack loads them (`Linear.weight` is the kernel
transposed, `implementations.stacks.torch.mlp`): no layer draws from torch's RNG, and the
model is never `post_init`-ed (transformers' own init would overwrite them).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_layers import GradientCheckpointingLayer

from ...contract import Params
from ..torch.mlp import STATE_NAMES, CanonicalLinear, params_to_state


class RematMLPConfig(PretrainedConfig):
    """The MLP's sizes: `dim` (D) in, `features` (F) out."""

    model_type = "remat_mlp"

    def __init__(self, dim: int = 1, features: int = 1, **kwargs: Any):
        self.dim, self.features = dim, features
        super().__init__(**kwargs)


class RematMLPBlock(GradientCheckpointingLayer):
    """`Linear(D, F)` -> relu -> `Linear(F, F)`: the layer transformers checkpoints, in
    training mode, once `activation_checkpointing_enable` has set its flag."""

    def __init__(self, fc1: torch.nn.Linear, fc2: torch.nn.Linear):
        super().__init__()
        self.fc1, self.fc2 = fc1, fc2

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        return self.fc2(torch.relu(self.fc1(x)))


class RematMLPModel(PreTrainedModel):
    """The MLP as a transformers model: one `RematMLPBlock`, x passed to it positionally (a
    reentrant checkpoint differentiates its positional inputs only)."""

    config_class = RematMLPConfig
    base_model_prefix = "remat_mlp"
    main_input_name = "x"  # not "input_ids": no embeddings to make require grad
    supports_gradient_checkpointing = True

    def __init__(self, config: RematMLPConfig, block: RematMLPBlock):
        super().__init__(config)
        self.block = block

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        return self.block(x)


def build_model(params: Params, device: Any = None) -> RematMLPModel:
    """A `RematMLPModel` holding `params`, in training mode, its switch off."""
    state = params_to_state(params, device)
    block = RematMLPBlock(
        CanonicalLinear(state["fc1.weight"], state["fc1.bias"]),
        CanonicalLinear(state["fc2.weight"], state["fc2.bias"]),
    )
    return RematMLPModel(RematMLPConfig(params.dim, params.features), block).train()


def parameters(block: torch.nn.Module) -> list[torch.Tensor]:
    """The block's parameters in the canonical order w1, b1, w2, b2 (torch's layout)."""
    return [block.get_parameter(name) for name in STATE_NAMES]
