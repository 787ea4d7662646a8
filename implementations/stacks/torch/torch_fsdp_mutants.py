"""Mutants of the FSDP2 port (`torch_fsdp`), one bug each."""

from __future__ import annotations

from implementations.stacks.torch.torch_fsdp import TorchFsdp


class FsdpNoCheckpoint(TorchFsdp):
    """FSDP2 over the gloo ranks with the checkpoint left out: the values are right, every
    rank keeps its activations for backward and reruns nothing."""

    def checkpointed(self, checkpoint: bool) -> bool:
        return False
