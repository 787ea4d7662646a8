"""Mutants of the torch_ac_wrapper port: the wrapper on the wrong modules."""

from __future__ import annotations

from torch import nn

from implementations.stacks.torch.torch_ac_wrapper import TorchAcWrapper


class WrapperOnChildren(TorchAcWrapper):
    """`check_fn` picks the block's children (each Linear), not the block: each Linear is a
    region of its own, and relu's output, the second Linear's input, is kept between them
    (accelerate#4172)."""

    def picks(self, module: nn.Module) -> bool:
        return isinstance(module, nn.Linear)
