"""The compiled PyTorch port: `torch.compile` (inductor) of the checkpointed MLP module.

The model is the eager port's (the torch stack's `MLP`), whose forward pass is
`torch.utils.checkpoint(block, x, use_reentrant=False)`; this port calls it
through `torch.compile` with inductor, the default backend, on the CPU
(inductor writes C++ and compiles it with the system's compiler).
`TorchPort` builds the contract on that call, so the converters, the
canonical init and the input checks are the eager port's; the checks run
in plain Python before any compiled code.

**Evidence** comes from the compiled path's own instrument: AOTAutograd's
partitioned forward and backward graphs, as inductor received them
(`implementations.stacks.torch.compiled`). With the checkpoint on, the forward graph keeps x (and
the parameters) and the backward graph recomputes the first layer; with it
off, the forward graph keeps relu's output. The records read the partition
that the port's own `vjp` or `nn_checkpoint_forward` ran (`compiled.capture`,
whatever compiled module ran it); a call that compiled nothing is read by
torch's eager instrument on that same call (`compiled_or_eager`).

**Policies.** `none`: no checkpoint, under a partitioner that recomputes
nothing. `full`: the checkpoint. `save_dots`, `save_named`: selective
checkpointing, spelled as dynamo accepts it
(`functools.partial(create_selective_checkpoint_contexts, policy_fn)`; a
callable object makes dynamo raise); `save_named` saves the output of the
`remat_conformance::tag` operator on h. `budget(b)`: no checkpoint, and
inductor's partitioner given `torch._functorch.config.activation_memory_budget
= b` (0: recompute all it can; 1: its default). Each policy compiles through
a `CompiledModule` of its own, so no graph compiled for one is ever reused
for another.

**Compiling.** One compiled function serves every call: dynamo caches a
graph per set of guards (grad mode, which inputs require grad, the
checkpoint flag, and whether a size is 1), so neither a new seed nor a new
shape compiles again: inductor compiles here without its rewrites of small
matrix-vector products, which guard on the sizes and so compiled a graph
per range of them (`compiled.decompositions`). The first call in a process
costs seconds (inductor's own start-up and a C++ compile); inductor's
on-disk cache makes the next process faster.
Imports torch, numpy and the project's numpy-only modules, never jax.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch

from implementations.contract import BackwardRecord, Params
from implementations.policies import FULL, NONE, Policy
from implementations.stacks.base import observes
from implementations.stacks.torch import MLP, TorchPort, instrument, leaf_input
from implementations.stacks.torch.compiled import CompiledModule, NoRemat, capture
from implementations.stacks.torch.instrument import backward_of
from implementations.stacks.torch.policies import SAVE_DOTS
from implementations.stacks.torch.stateful import COMPILED_VARIANTS, StatefulTorch

# The port's compiled calls, each with the recorder of every graph it compiles:
# inductor as it comes (the exercise, and every call with the checkpoint on),
# and, for the checkpoint off, inductor with a partitioner that recomputes
# nothing (see `TorchCompile.run`).
COMPILED = CompiledModule()
PLAIN = CompiledModule(inductor={"custom_partitioner_fn": NoRemat()})
#: Selective checkpointing, one compiled call per policy.
SELECTIVE = {name: CompiledModule() for name in ("save_dots", "save_named")}
#: The nested composition cases, one compiled call each (measured, not declared: see
#: `TorchCompile.not_composable`).
NESTED = {case: CompiledModule() for case in ("twice", "under_trainer")}
#: `budget(b)`: one compiled call per budget, made at its first use.
BUDGETS: dict[float, CompiledModule] = {}


def budget_module(budget: float) -> CompiledModule:
    """The compiled call whose partitioner runs under `activation_memory_budget = budget`."""
    if budget not in BUDGETS:
        BUDGETS[budget] = CompiledModule(functorch={"activation_memory_budget": budget})
    return BUDGETS[budget]


class TorchCompile(StatefulTorch, TorchPort):
    """`torch.compile` (inductor) of the module whose forward is `torch.utils.checkpoint`."""

    name = "torch_compile"
    checkpoint_api = "torch.compile"
    #: The block with variables and RNGs: the fix for pytorch#96136, and the budget's failure.
    state_runs = COMPILED_VARIANTS
    #: Whose policy expectations hold (conformance's `policy_expectations`): the partitioned
    #: graphs', not eager torch's; a mutant of this port keeps it under its own name.
    instrument_family = "torch_compile"
    policies: ClassVar[dict[str, str]] = {
        "none": "no checkpoint (inductor's min-cut partitioner told to recompute nothing)",
        "full": "torch.utils.checkpoint(use_reentrant=False) under torch.compile",
        "save_dots": f"{SAVE_DOTS}, under torch.compile",
        "save_named": "custom op remat_conformance::tag on h, its output MUST_SAVE through "
        "functools.partial(create_selective_checkpoint_contexts, policy_fn)",
        "budget": "no checkpoint; torch._functorch.config.activation_memory_budget = b "
        "while inductor compiles",
    }
    inexpressible: ClassVar[dict[str, str]] = {
        "offload_dots": "AOTAutograd's partitioner treats CPU_OFFLOAD as a plain save "
        "(torch 2.13): nothing is offloaded",
    }
    compositions: ClassVar[dict[str, str]] = {
        "once": "checkpoint(block, x, use_reentrant=False) under torch.compile",
    }
    #: Measured (tests/torch/test_torch_compile_composition.py): dynamo keeps the nested
    #: tag_activation_checkpoint, AOTAutograd's partition holds one region.
    not_composable: ClassVar[dict[str, str]] = {
        "twice": "AOTAutograd traces the inner tag_activation_checkpoint inside the outer's and "
        "tags every node with one ac_graph_id (torch/_higher_order_ops/wrap.py): the partition "
        "holds one region, once's (torch 2.13)",
        "under_trainer": "the trainer's checkpoint over the compiled model's call flattens as "
        "twice does: one ac_graph_id, one region in the partition (torch 2.13)",
    }

    def __init__(
        self,
        compiled: CompiledModule = COMPILED,
        plain: CompiledModule = PLAIN,
        selective: dict[str, CompiledModule] | None = None,
    ):
        self.compiled, self.plain = compiled, plain
        self.selective = SELECTIVE if selective is None else selective

    def checkpoints(self, policy: Policy) -> bool:
        return policy.name not in ("none", "budget")  # a budget is the partitioner's alone

    def model(self, params: Params, checkpoint: Any, context_fn=None) -> MLP:
        model = super().model(params, checkpoint, context_fn)
        model.remat_policy = self.policy(checkpoint)  # which compiled call runs it (`run`)
        return model

    def compiled_for(self, policy: Policy) -> CompiledModule:
        """The compiled call that runs `policy`."""
        if policy.name == "none":
            # With the checkpoint off, inductor's min-cut partitioner may still
            # recompute whatever it judges free (under inductor's small
            # matrix-vector rewrites it recomputed the first layer at D < F <= 16),
            # and "off" would not be the control that (e) needs: off runs under a
            # partitioner that recomputes nothing.
            return self.plain
        if policy.name == "budget":
            return budget_module(policy.budget)
        return self.selective.get(policy.name, self.compiled)

    def run(self, model: MLP, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        if model.checkpoint and model.nesting in NESTED:  # a composition case: its own call
            return NESTED[model.nesting](model, x)
        # The exercise's model carries no policy: it is the checkpointed one.
        default = FULL if model.checkpoint else NONE
        return self.compiled_for(getattr(model, "remat_policy", default))(model, x)

    # -- evidence: the partitions of the port's own compiled calls ------------------------

    @observes("vjp")
    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool | Policy = True
    ) -> BackwardRecord:
        """The partition of the compiled call this port's own `vjp(params, x, ones,
        checkpoint=checkpoint)` ran (its backward graph compiled in that call's own backward
        pass), whatever a subclass overrides."""
        ones = np.ones(params.features, np.float32)
        return compiled_or_eager(lambda: self.vjp(params, x, ones, checkpoint=checkpoint), x)

    @observes("nn_checkpoint_forward")
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        """The partition of the compiled call this port's own `nn_checkpoint_forward(seed, x,
        features)` ran, x a leaf that requires grad, and the backward pass of its output."""
        x = leaf_input(x)
        return compiled_or_eager(
            lambda: backward_of(self.nn_checkpoint_forward(seed, x, features)), x
        )


def compiled_or_eager(call: Callable[[], Any], x: Any) -> BackwardRecord:
    """The record of `call()`, a port's own call: the partition of the last compiled call it
    ran (`compiled.capture`, any recorder's). A call that ran no compiled graph ran eagerly:
    torch's eager instrument on that same call, run again (`instrument.observe`)."""
    with capture() as seen:
        call()
    if seen.calls:
        return seen.record()
    return instrument.observe(call, x)


nn_checkpoint_forward = TorchCompile.exported()
