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
off, the forward graph keeps relu's output.

**Compiling.** One compiled function serves every call: dynamo caches a
graph per set of guards (grad mode, which inputs require grad, the
checkpoint flag, and, with dynamic shapes, ranges of D and F), so a new
seed never compiles again, and a new shape only when it falls in a new
range. The first call in a process costs seconds (inductor's own start-up
and a C++ compile); inductor's on-disk cache makes the next process faster.
Imports torch, numpy and the project's numpy-only modules, never jax.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch

from .contract import BackwardRecord, Params
from .stacks.torch import MLP, TorchPort, build_mlp, leaf_input
from .stacks.torch.compiled import CompiledModule, NoRemat

# The port's compiled calls, each with the recorder of every graph it compiles:
# inductor as it comes (the exercise, and every call with the checkpoint on),
# and, for the checkpoint off, inductor with a partitioner that recomputes
# nothing (see `TorchCompile.run`).
COMPILED = CompiledModule()
PLAIN = CompiledModule(inductor={"custom_partitioner_fn": NoRemat()})


class TorchCompile(TorchPort):
    """`torch.compile` (inductor) of the module whose forward is `torch.utils.checkpoint`."""

    name = "torch_compile"
    checkpoint_api = "torch.compile"
    # none and full only, for now: selective checkpointing is the torch half of issue 21.
    policies: ClassVar[dict[str, str]] = {
        "none": "no checkpoint",
        "full": "torch.utils.checkpoint under torch.compile",
    }
    inexpressible: ClassVar[dict[str, str]] = {
        name: "not declared yet (selective checkpointing: to come)"
        for name in ("save_dots", "save_named", "offload_dots", "budget")
    }

    def __init__(self, compiled: CompiledModule = COMPILED, plain: CompiledModule = PLAIN):
        self.compiled, self.plain = compiled, plain

    def run(self, model: MLP, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        # With the checkpoint off, inductor's min-cut partitioner would still
        # recompute whatever it judges free (here the first layer, when D < F
        # <= 16), and "off" would not be the control that (e) needs: off runs
        # under a partitioner that recomputes nothing, so what the forward
        # keeps is what eager autograd keeps.
        return (self.compiled if model.checkpoint else self.plain)(model, x)

    def _compiled_for(self, model: MLP) -> CompiledModule:
        return self.compiled if model.checkpoint else self.plain

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        model = build_mlp(params, checkpoint=checkpoint)
        x = leaf_input(x)
        with self._compiled_for(model).recorder.capture() as seen:
            out = self.run(model, x)
        # The backward graph may be compiled at the first backward pass: run one.
        torch.autograd.grad(out, [x, *model.parameters()], torch.ones_like(out))
        return seen.record()

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        x = leaf_input(x)
        with self.compiled.recorder.capture() as seen:
            out, _ = self.exercise(seed, x, features)
        torch.autograd.grad(out, x, torch.ones_like(out))
        return seen.record()


nn_checkpoint_forward = TorchCompile.exported()
