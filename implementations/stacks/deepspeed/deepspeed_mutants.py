"""Mutants of the DeepSpeed port: the checkpoint left out."""

from __future__ import annotations

from implementations.stacks.deepspeed.deepspeed import DeepSpeed


class DeepSpeedNoCheckpoint(DeepSpeed):
    """`deepspeed.checkpointing.checkpoint` dropped: the block runs as it is."""

    def run(self, model, x):
        return model.block(x)
