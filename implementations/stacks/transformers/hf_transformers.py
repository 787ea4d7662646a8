"""The Hugging Face switch: the exercise's MLP as a transformers model (`model.py`), remat
switched on by `PreTrainedModel.activation_checkpointing_enable(activation_checkpointing_kwargs)`
(transformers 5.23; the deprecated `gradient_checkpointing_enable` is held to the same results
by tests/transformers). Imports torch, transformers and numpy.

transformers checkpoints a `GradientCheckpointingLayer`'s `forward` with
`torch.utils.checkpoint` and the kwargs given, **only while the layer is in training mode**
(`modeling_layers.GradientCheckpointingLayer.__init_subclass__`): the port's model is
`train()`-ed, and a model left in `eval()` keeps every activation (the mutant
`hf_eval_mode`). The kwargs carry `use_reentrant=False` and, for `save_dots`, torch's
selective checkpointing (`context_fn`, as `implementations.stacks.torch.policies` spells it);
while the instrument observes the call, its `context_fn` (regions counted) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch

from implementations.contract import Params
from implementations.stacks.torch import TorchPort, leaf_input, state_to_params
from implementations.stacks.torch.stateful import StatefulTorch, Variant
from implementations.stacks.torch.torch_ac_wrapper import (
    CheckpointImpl,
    context_for,
    exercise_of,
    prepared_grads,
    wrap,
)

from .expectations import HF_TRANSFORMERS
from .model import RematMLPBlock, RematMLPModel, build_model, parameters
from .stateful import switched_off, switched_on


class HfTransformers(StatefulTorch, TorchPort):
    """The MLP as a `PreTrainedModel`, remat by `activation_checkpointing_enable`."""

    name = "hf_transformers"
    framework = "transformers"
    checkpoint_api = "model.activation_checkpointing_enable()"
    state_runs: ClassVar[dict[str, Variant]] = {
        "default": Variant(
            HF_TRANSFORMERS["default"].spelling,
            switched_on,
            switched_off,
        )
    }
    instrument_family = "transformers"
    policies: ClassVar[dict[str, str]] = {
        "none": "the switch off (activation_checkpointing_enable never called)",
        "full": 'activation_checkpointing_enable({"use_reentrant": False})',
        "save_dots": 'activation_checkpointing_enable({"use_reentrant": False, "context_fn": '
        "partial(create_selective_checkpoint_contexts, policy_fn)}): addmm/mm -> MUST_SAVE",
    }
    inexpressible: ClassVar[dict[str, str]] = {
        "save_named": "torch has no tensor names, and transformers' layer offers no hook to "
        "route h through a tag op",
        "offload_dots": "offload=True wraps the checkpoint in save_on_cpu(pin_memory=True): it "
        "moves what the checkpoint keeps (the layer's input), not the dots, and on a CPU-only "
        "machine it raises (no pinned memory allocator)",
        "budget": "no memory budget: every_n_layers picks whole layers, and the exercise has one",
    }
    compositions: ClassVar[dict[str, str]] = {
        "once": 'activation_checkpointing_enable({"use_reentrant": False})',
        "under_trainer": "the switch on, and apply_activation_checkpointing(model, "
        "checkpoint_wrapper_fn=partial(checkpoint_wrapper, NO_REENTRANT), check_fn=isinstance "
        "RematMLPBlock) on top",
    }
    not_composable: ClassVar[dict[str, str]] = {
        "twice": "one switch per layer: enabling it again replaces the layer's "
        "_gradient_checkpointing_func, it does not nest (PreTrainedModel._set_gradient_"
        "checkpointing)",
    }
    #: The checkpoint kwargs every switch carries (transformers' own default is the same).
    use_reentrant: ClassVar[bool] = False

    def switch(self, model: RematMLPModel, kwargs: dict[str, Any]) -> None:
        """Flip transformers' switch on `model` with `kwargs` for `torch.utils.checkpoint`."""
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)

    def checkpoint_kwargs(self, context_fn: Callable | None) -> dict[str, Any]:
        """What the switch hands `torch.utils.checkpoint` (a reentrant one takes no
        `context_fn`)."""
        kwargs: dict[str, Any] = {"use_reentrant": self.use_reentrant}
        if context_fn is not None and not self.use_reentrant:
            kwargs["context_fn"] = context_fn
        return kwargs

    def model(
        self,
        params: Params,
        checkpoint: Any,
        context_fn: Callable[[], tuple[Any, Any]] | None = None,
        device: Any = None,
    ) -> RematMLPModel:
        policy = self.policy(checkpoint)
        model = build_model(params, device)
        if policy.name == "none":
            return model
        self.switch(
            model, self.checkpoint_kwargs(context_fn or context_for(self.policy_function(policy)))
        )
        if self.nesting(checkpoint) == "under_trainer":  # the trainer's wrapper on top
            wrap(model, _is_block, CheckpointImpl.NO_REENTRANT, context_for(None))
        return model

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # Loaded into the transformers model and exported again: the converters are checked.
        params = self.stack.canonical_params(seed, dim, features)
        return state_to_params(_block(build_model(params)).state_dict())

    def input_of(self, x: np.ndarray) -> torch.Tensor:
        """x as the model gets it: a new leaf that requires grad."""
        return leaf_input(x)

    def prepared_vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Callable[[], list[torch.Tensor]]:
        """`vjp`'s call: the model and tensors made here, once; the callable runs the model
        and its backward pass (`prepared_grads`: x's gradient first, then each weight's)."""
        model, x = self.model(params, checkpoint), self.input_of(x)
        return prepared_grads(self, model, x, parameters(_block(model)), cotangent)

    def exercise(self, seed: Any, x: Any, features: Any, **build: Any) -> tuple[torch.Tensor, Any]:
        return exercise_of(self, seed, x, features)


def _is_block(module: torch.nn.Module) -> bool:
    return isinstance(module, RematMLPBlock)


def _block(model: RematMLPModel) -> RematMLPBlock:
    # The block, under the trainer's CheckpointWrapper where one is applied.
    block = model.block
    while not isinstance(block, RematMLPBlock):
        block = block._checkpoint_wrapped_module
    return block


nn_checkpoint_forward = HfTransformers.exported()
