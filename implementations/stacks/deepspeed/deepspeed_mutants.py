"""Mutants of the DeepSpeed port: the checkpoint left out, and the porter's own model, never
checkpointed."""

from __future__ import annotations

from implementations.stacks.deepspeed.deepspeed import DeepSpeed
from implementations.stacks.torch.plain_model import PlainModel


class DeepSpeedNoCheckpoint(DeepSpeed):
    """`deepspeed.checkpointing.checkpoint` dropped: the block runs as it is."""

    def run(self, model, x):
        return model.block(x)


class OwnModelWithoutCheckpoint(PlainModel, DeepSpeed):
    """`forward`, `vjp` and `nn_checkpoint_forward` overridden by a plain MLP of the port's own
    (`PlainModel`), while the base's model (`run`) still goes through DeepSpeed's checkpoint:
    the values are right, and only evidence read off the port's own call can tell."""
