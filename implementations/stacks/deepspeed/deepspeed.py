"""The DeepSpeed port: `deepspeed.checkpointing.checkpoint` around the torch stack's MLP.

DeepSpeed's activation checkpointing is the one most large torch training
runs use. Its `checkpoint(function, *args)` is a *reentrant* checkpoint (an
`autograd.Function`, `CheckpointFunction`, that keeps its inputs detached
and reruns `function` under `enable_grad` in backward). So, unlike
`torch.utils.checkpoint(..., use_reentrant=False)`:

- it refuses `torch.autograd.grad`; gradients come from `.backward()`;
- its output requires grad only when an *input* does: parameters alone are
  not enough (the exercise freezes them when x needs no grad anyway);
- it takes no `context_fn`: regions are counted as `CheckpointFunctionBackward`
  nodes in the autograd graph (`implementations.stacks.torch.reentrant`).

The module-level defaults (no `partition_activations`, no
`checkpoint_in_cpu`) need no `deepspeed.checkpointing.configure()`, and so
no process group: `configure` is what needs `init_distributed`, whose first
call on this CPU compiles DeepSpeed's shared-memory op (minutes). The model,
its converters and the numpy init are the torch stack's. Imports torch,
deepspeed, numpy and the project's numpy-only modules, never jax.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import deepspeed
import numpy as np
import torch

from implementations.contract import BackwardRecord, Grads, Params
from implementations.policies import whole_block
from implementations.stacks.base import observes
from implementations.stacks.deepspeed.expectations import DEEPSPEED
from implementations.stacks.numpy import out_in
from implementations.stacks.switch import checkpoint_on
from implementations.stacks.torch import (
    MLP,
    TorchPort,
    build_mlp,
    leaf_input,
    reentrant,
    to_host_array,
)
from implementations.stacks.torch.instrument import backward_of
from implementations.stacks.torch.mlp import STATE_NAMES
from implementations.stacks.torch.mlp import tensor as as_tensor
from implementations.stacks.torch.stateful import StatefulTorch, Variant

#: The checkpoint's node in the autograd graph: one per region.
CHECKPOINT_NODE = "CheckpointFunctionBackward"
#: Where that node keeps the block's inputs: a plain attribute of its ctx, not
#: `save_for_backward`, so no saved-tensor hook sees them.
KEPT_ON_NODE = "deepspeed_saved_tensors"


class DeepSpeed(StatefulTorch, TorchPort):
    """The DeepSpeed port: `deepspeed.checkpointing.checkpoint(block, x)` (reentrant), eager."""

    name = "deepspeed"
    framework = "deepspeed"
    checkpoint_api = "deepspeed.checkpointing.checkpoint"
    state_runs: ClassVar[dict[str, Variant]] = {
        "default": Variant(DEEPSPEED["default"].spelling, deepspeed.checkpointing.checkpoint)
    }
    #: A reentrant checkpoint reruns the whole block: its own expectations, not eager torch's.
    instrument_family = "deepspeed"
    policies, inexpressible = whole_block(
        "deepspeed.checkpointing.checkpoint",
        "the plain module",
        "deepspeed.checkpointing.checkpoint(block, x)",
        keeps="it keeps the inputs",
        save_named="no names: deepspeed.checkpointing.checkpoint takes no policy",
        offload_dots="checkpoint_in_cpu offloads the inputs, not the dots, and fails "
        'upstream on this model ("0D and 2D", deepspeed 0.19.8)',
        budget="no memory budget; partition_activations shards the inputs across ranks "
        "and fails on 2-D inputs (deepspeed 0.19.8)",
    )

    #: DeepSpeed's offload and sharding options (`deepspeed.checkpointing.configure(None,
    #: option=True)`, which needs a process group: `deepspeed.init_distributed("gloo")`, one
    #: rank), and what each does to this port's checkpoint here (deepspeed 0.19.8, torch 2.13,
    #: CPU). Neither is a policy; the port runs the defaults. Pinned in tests/deepspeed: a test
    #: fails the day DeepSpeed changes what is said here.
    options: ClassVar[dict[str, str]] = {
        "partition_activations": "works on a 1-D x (the output and every gradient are bitwise "
        "the default checkpoint's); fails on a 2-D x in backward (RuntimeError: The size of "
        "tensor a (B*D) must match the size of tensor b (D) at non-singleton dimension 1; for "
        "B = 1: output with shape [D] doesn't match the broadcast shape [1, D]): it keeps x "
        "flattened to (B*D,), puts that back as x's data, and x's gradient no longer fits",
        "checkpoint_in_cpu": "fails on every x in backward (RuntimeError: both arguments to "
        "linear need to be at least 1D, but they are 0D and 2D): on the CPU its copy of x to "
        "the CPU is x itself, whose data it empties before keeping it, so the rerun gets a 0-D x",
    }
    #: What both options do to the caller's x meanwhile: between the forward and the backward
    #: pass, x's data is a 0-D placeholder (x.shape == ()), its data kept aside.
    option_side_effect = "the caller's x is a 0-D placeholder between the forward and backward"

    compositions: ClassVar[dict[str, str]] = {
        "once": "deepspeed.checkpointing.checkpoint(block, x)",
        "twice": "checkpoint(lambda y: checkpoint(block, y), x)",
        "under_trainer": "checkpoint(model_call, x) around a model call that checkpoints its block",
    }

    def run(self, model: MLP, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        """The block on x, checkpointed as `model.checkpoint` and its composition case
        `model.nesting` say (`implementations.composition`): `twice`, the region wrapped
        again; `under_trainer`, the model's call in an outer checkpoint, as a trainer adds."""
        nesting = model.nesting
        if not (model.checkpoint and model._needs_grad(x)):
            return model.block(x)
        # `deepspeed.checkpointing` is an attribute (the module
        # deepspeed.runtime.activation_checkpointing.checkpointing), not a submodule.
        checkpoint = deepspeed.checkpointing.checkpoint
        if nesting == "twice":
            return checkpoint(lambda y: checkpoint(model.block, y), x)
        if nesting == "under_trainer":
            return checkpoint(functools.partial(self.model_call, model), x)
        return checkpoint(model.block, x)

    @staticmethod
    def model_call(model: MLP, x: torch.Tensor) -> torch.Tensor:
        """The model's call as a library writes it: its block in its own checkpoint, whatever
        the grad mode (the trainer's outer region runs it under no_grad first)."""
        return deepspeed.checkpointing.checkpoint(model.block, x)

    def built(self, params: Params, checkpoint: Any) -> MLP:
        """The model for one call, carrying its composition case (an undeclared one refused
        by name)."""
        nesting = self.nesting(checkpoint)
        if nesting != "once":
            self.policy(checkpoint)
        return build_mlp(params, checkpoint=checkpoint_on(checkpoint), nesting=nesting)

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        model = self.built(params, checkpoint)
        return to_host_array(self.run(model, leaf_input(x)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        grads = self.prepared_vjp(params, x, cotangent, checkpoint=checkpoint)()
        return out_in.to_grads(grads[1:], grads[0], to_host_array)

    def prepared_vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Callable[[], list[torch.Tensor | None]]:
        """`vjp`'s call: the model and tensors made here, once; the callable runs the model
        and its reentrant backward pass (x's gradient first, then each parameter's)."""
        model, x = self.built(params, checkpoint), leaf_input(x)
        parameters = [model.get_parameter(name) for name in STATE_NAMES]
        cotangent = as_tensor(cotangent)
        return lambda: reentrant.backward(self.run(model, x), x, parameters, cotangent)

    # -- evidence: torch's instrument on the port's own calls (`reentrant.observe`) --------

    @observes("vjp")
    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        """The instrument on this port's own `vjp(params, x, ones, checkpoint=checkpoint)`,
        with what its checkpoint nodes keep out of the hooks' sight."""
        ones = np.ones(params.features, np.float32)
        return reentrant.observe(
            lambda: self.vjp(params, x, ones, checkpoint=checkpoint),
            x,
            CHECKPOINT_NODE,
            KEPT_ON_NODE,
        )

    @observes("nn_checkpoint_forward")
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        """The instrument on this port's own `nn_checkpoint_forward(seed, x, features)`, x a
        leaf that requires grad, and the backward pass of its output."""
        x = leaf_input(x)
        return reentrant.observe(
            lambda: backward_of(self.nn_checkpoint_forward(seed, x, features)),
            x,
            CHECKPOINT_NODE,
            KEPT_ON_NODE,
        )


nn_checkpoint_forward = DeepSpeed.exported()
