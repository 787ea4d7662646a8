"""Mutants of the compiled torch port (`torch_compile`), one bug each.

They reuse the port's compiled call, so in a process that has run the port
they compile only what their bug changes.
"""

from __future__ import annotations

import torch

from implementations.stacks.torch.mlp import MLP
from implementations.torch_compile import TorchCompile


class CompiledWithoutCheckpoint(TorchCompile):
    """`torch.compile` of the module with its checkpoint left out (inductor's partitioner as is).

    The values are right. Inductor's min-cut partitioner still recomputes the
    first layer on its own where it judges that free (D < F <= 16), so there
    the backward keeps no activation either: only the checkpoint region that
    AOTAutograd tags, absent here, tells a checkpoint from the compiler.
    """

    def run(self, model: MLP, x: torch.Tensor) -> torch.Tensor:
        model.checkpoint = False  # the forward pass calls the block directly
        return self.compiled(model, x)
