"""Mutants of the compiled torch port (`torch_compile`), one bug each.

They reuse the port's compiled call, so in a process that has run the port
they compile only what their bug changes.
"""

from __future__ import annotations

import torch

from implementations.policies import Policy
from implementations.stacks.torch import policies as torch_policies
from implementations.stacks.torch.compiled import CompiledModule
from implementations.stacks.torch.mlp import MLP
from implementations.stacks.torch.plain_model import PlainModel
from implementations.stacks.torch.torch_compile import SELECTIVE, TorchCompile


class CompiledWithoutCheckpoint(TorchCompile):
    """`torch.compile` of the module with its checkpoint left out (inductor's partitioner as is).

    The values are right. Inductor's min-cut partitioner then recomputes no
    matmul and keeps relu's output and mask, which (e) sees. (Under inductor's
    small matrix-vector rewrites it recomputed the first layer on its own at
    D < F <= 16: there only the checkpoint region, absent here, told them apart.)
    """

    def run(self, model: MLP, x: torch.Tensor) -> torch.Tensor:
        model.checkpoint = False  # the forward pass calls the block directly
        return self.compiled(model, x)


class OwnModelWithoutCheckpoint(PlainModel, TorchCompile):
    """`forward`, `vjp` and `nn_checkpoint_forward` overridden by a plain eager MLP of the
    port's own (`PlainModel`), while the base's model still runs compiled, checkpoint and all:
    the values are right, and only evidence read off the port's own call can tell (the call
    compiles nothing, so torch's eager instrument reads it)."""


class BudgetIgnored(TorchCompile):
    """`budget(b)` compiled as the port compiles `none`, whatever b says.

    The values are right. The budget never reaches the partitioner: the
    module without a checkpoint runs through the port's no-remat compile,
    which keeps a and relu's mask where budget 0 asks to
    recompute all it can and keep x alone. Only property (j), which asks
    each declared policy for its saved roles, sees it.
    """

    def compiled_for(self, policy: Policy) -> CompiledModule:
        if policy.name == "budget":
            return self.plain
        return super().compiled_for(policy)


class StatefulPolicyUnderCompile(TorchCompile):
    """`save_dots` spelled as a stateful policy: "save the first matmul", which is h.

    Eager torch honours it (it saves h, as save_dots does in the compiled
    port). Under `torch.compile` the policy is called twice per operator,
    the second call sees the state the first one advanced, and the saving
    is silently lost: the forward keeps x alone and the backward reruns the
    first layer, full remat under the name save_dots. Only (j) sees it.
    """

    def __init__(self):
        super().__init__(selective={**SELECTIVE, "save_dots": CompiledModule()})
        self._stateful = torch_policies.stateful_first_matmul()

    def policy_function(self, policy: Policy):
        if policy.name == "save_dots":
            return self._stateful
        return super().policy_function(policy)
