"""The block with variables and RNGs (`implementations.stacks.torch.stateful.Block`) as a
transformers model: a `GradientCheckpointingLayer` holding it, under a `PreTrainedModel`.
Imports torch and transformers.

transformers checkpoints the layer with `torch.utils.checkpoint` and the kwargs given while it
is in training mode; the model is never `post_init`-ed, so the block's parameters stay the
canonical ones.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel
from transformers.modeling_layers import GradientCheckpointingLayer

from .model import RematMLPConfig


class StatefulLayer(GradientCheckpointingLayer):
    """The block as the layer transformers checkpoints."""

    def __init__(self, block: torch.nn.Module):
        super().__init__()
        self.block = block

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, F)
        return self.block(x)


class StatefulModel(PreTrainedModel):
    """One `StatefulLayer`, x passed to it positionally."""

    config_class = RematMLPConfig
    base_model_prefix = "remat_stateful"
    main_input_name = "x"
    supports_gradient_checkpointing = True

    def __init__(self, config: RematMLPConfig, block: torch.nn.Module):
        super().__init__(config)
        self.layer = StatefulLayer(block)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


def model_of(block: torch.nn.Module) -> StatefulModel:
    """The block in a `StatefulModel`, in training mode, its switch off."""
    config = RematMLPConfig(block.fc1.in_features, block.fc2.out_features)
    return StatefulModel(config, block).train()


def switched_off(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model_of(block)(x)


def switched_on(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The model with transformers' switch on (`use_reentrant=False`, as the port's MLP)."""
    model = model_of(block)
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    return model(x)
