"""The trainer's switch: torch's `apply_activation_checkpointing` (the FSDP tutorials' recipe)
over a model whose block is a submodule. Imports torch and numpy.

```python
apply_activation_checkpointing(
    model,
    checkpoint_wrapper_fn=partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT),
    check_fn=lambda m: isinstance(m, Block),
)
```

replaces `model.block` with a `CheckpointWrapper` whose forward is
`torch.utils.checkpoint(block, x, use_reentrant=False, **checkpoint_fn_kwargs)`. The block is
the torch stack's `MLP` with its own checkpoint off (`Linear -> relu -> Linear`), so the
wrapper's is the only one. `checkpoint_impl` is a port attribute, not a policy: reentrant and
non-reentrant both keep the block's input (full remat); they differ in how they run it (the
reentrant one reruns the whole block, takes no `context_fn` and refuses `autograd.grad`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl,
    apply_activation_checkpointing,
    checkpoint_wrapper,
)

from ...contract import Params, check_features, check_seed, check_sizes
from ..numpy import canonical_params
from . import instrument
from . import policies as torch_policies
from .arrays import as_input, leaf_input
from .mlp import MLP, STATE_NAMES, build_mlp, state_to_params
from .mlp import tensor as as_tensor
from .port import TorchPort
from .state_declarations import TORCH_AC_WRAPPER
from .stateful import StatefulTorch, Variant


class Net(nn.Module):
    """A model whose block is a submodule, as a trainer finds it: `block(x)`."""

    def __init__(self, block: nn.Module):
        super().__init__()
        self.block = block

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        return self.block(x)


def context_for(function: Callable | None) -> Callable[[], tuple[Any, Any]] | None:
    """The `context_fn` a checkpoint gets: the watch's while the instrument observes the call
    (it counts regions and reads a selective policy's cache), else the policy's own (None for
    full remat)."""
    watch = instrument.active()
    if watch is not None:
        return watch.context_fn(function)
    return None if function is None else torch_policies.context_fn(function)


def wrap(
    model: nn.Module,
    check_fn: Callable[[nn.Module], bool],
    impl: CheckpointImpl,
    context_fn: Callable[[], tuple[Any, Any]] | None = None,
) -> None:
    """`apply_activation_checkpointing` on `model`: every submodule `check_fn` picks goes
    under a `checkpoint_wrapper` of `impl` (a reentrant one takes no `context_fn`)."""
    kwargs = {} if context_fn is None else {"context_fn": context_fn}
    wrapper_fn = functools.partial(checkpoint_wrapper, checkpoint_impl=impl, **kwargs)
    apply_activation_checkpointing(model, checkpoint_wrapper_fn=wrapper_fn, check_fn=check_fn)


def wrapped_block(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The stateful block as a trainer runs it: `Net(block)` under
    `apply_activation_checkpointing` with a `NO_REENTRANT` wrapper on the block."""
    net = Net(block)
    wrap(net, lambda module: module is block, CheckpointImpl.NO_REENTRANT)
    return net(x)


def gradients(
    out: torch.Tensor, leaves: list[torch.Tensor], cotangent: torch.Tensor
) -> list[torch.Tensor]:
    """The gradients of `leaves` by `out.backward(cotangent)` (a reentrant checkpoint refuses
    `autograd.grad`), `.grad` left as found. A leaf nothing flowed into (`.grad` None, or an
    output that needs no grad at all, as a reentrant checkpoint's whose inputs need none) gets
    zeros: what an optimizer sees."""
    before = [leaf.grad for leaf in leaves]
    for leaf in leaves:
        leaf.grad = None
    try:
        if out.requires_grad:
            out.backward(cotangent)
        grads = [torch.zeros_like(leaf) if leaf.grad is None else leaf.grad for leaf in leaves]
    finally:
        for leaf, grad in zip(leaves, before, strict=True):
            leaf.grad = grad
    return grads


def prepared_grads(
    port: TorchPort, model: nn.Module, x: torch.Tensor, weights: list, cotangent: np.ndarray
) -> Callable[[], list[torch.Tensor]]:
    """The VJP of `port.run(model, x)` with `cotangent` into x and the block's weights (w1, b1,
    w2, b2 in torch's layout), its cotangent made here, once (a port's `prepared_vjp`): the
    callable returns x's gradient, then each weight's (`TorchPort.vjp` converts them)."""
    leaves, cotangent = [x, *weights], as_tensor(cotangent)
    return lambda: gradients(port.run(model, x), leaves, cotangent)


def exercise_of(port: TorchPort, seed: Any, x: Any, features: Any) -> tuple[torch.Tensor, Any]:
    """The exercise on `port.model(params, True)`: its output and the model."""
    x, params = exercise_inputs(seed, x, features)
    model = port.model(params, True, device=x.device)
    if not x.requires_grad:  # as the torch stack's exercise: only x is differentiable
        model.requires_grad_(False)
    return port.run(model, x), model


def exercise_inputs(seed: Any, x: Any, features: Any) -> tuple[torch.Tensor, Params]:
    """The exercise's checked x (a tensor, its graph kept) and Flax's canonical parameters for
    `PRNGKey(seed)`: the checks and their order are the torch stack's (`mlp.exercise_model`)."""
    seed, features = check_seed(seed), check_features(features)
    x = as_input(x)
    check_sizes(x.shape[0], features)
    return x, canonical_params(seed, x.shape[0], features)


class TorchAcWrapper(StatefulTorch, TorchPort):
    """torch's `apply_activation_checkpointing` with a non-reentrant `checkpoint_wrapper` on
    the model's block."""

    name = "torch_ac_wrapper"
    checkpoint_api = "apply_activation_checkpointing(model, checkpoint_wrapper, NO_REENTRANT)"
    instrument_family = "torch_ac_wrapper"
    #: How the wrapper runs the block (a port attribute: see the module's docstring).
    checkpoint_impl: ClassVar[CheckpointImpl] = CheckpointImpl.NO_REENTRANT
    state_runs: ClassVar[dict[str, Variant]] = {
        "default": Variant(TORCH_AC_WRAPPER["default"].spelling, wrapped_block)
    }
    policies: ClassVar[dict[str, str]] = {
        "none": "the model as it is, no wrapper applied",
        "full": "apply_activation_checkpointing(model, checkpoint_wrapper_fn=partial("
        "checkpoint_wrapper, checkpoint_impl=NO_REENTRANT), check_fn=isinstance Block)",
        "save_dots": "the same, checkpoint_wrapper(..., context_fn=partial("
        "create_selective_checkpoint_contexts, policy_fn)): aten.addmm/mm -> MUST_SAVE",
    }
    inexpressible: ClassVar[dict[str, str]] = {
        "save_named": torch_policies.EAGER_NO_NAMES,
        "offload_dots": f"{torch_policies.EAGER_NO_OFFLOAD}; offload_wrapper offloads every "
        "saved tensor, not the dots",
        "budget": torch_policies.EAGER_NO_BUDGET,
    }
    compositions: ClassVar[dict[str, str]] = {
        "once": "apply_activation_checkpointing(model, ...) once",
        "twice": "apply_activation_checkpointing(model, ...) twice: the second wraps the block "
        "inside the first wrapper again",
    }
    not_composable: ClassVar[dict[str, str]] = {
        "under_trainer": "this port is the trainer's switch; a model library's switch under it "
        "is hf_transformers' under_trainer",
    }

    def block(self, params: Params, device: Any = None) -> MLP:
        """The block: `Linear -> relu -> Linear`, its own checkpoint off."""
        return build_mlp(params, checkpoint=False, device=device)

    def picks(self, module: nn.Module) -> bool:
        """`check_fn`: the modules the wrapper goes on (the block)."""
        return isinstance(module, MLP)

    def model(
        self,
        params: Params,
        checkpoint: Any,
        context_fn: Callable[[], tuple[Any, Any]] | None = None,
        device: Any = None,
    ) -> Net:
        policy = self.policy(checkpoint)
        net = Net(self.block(params, device))
        if policy.name == "none":
            return net
        reentrant = self.checkpoint_impl == CheckpointImpl.REENTRANT
        if reentrant and self.policy_function(policy) is not None:  # never run it as full
            raise ValueError(
                f"checkpoint={policy.name}: a REENTRANT checkpoint_wrapper takes no context_fn, "
                "so no selective policy; use CheckpointImpl.NO_REENTRANT"
            )
        for _ in range(2 if self.nesting(checkpoint) == "twice" else 1):
            found = context_fn or context_for(self.policy_function(policy))
            wrap(net, self.picks, self.checkpoint_impl, None if reentrant else found)
        return net

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # Loaded into the block and exported again: the converters are checked too.
        params = self.stack.canonical_params(seed, dim, features)
        return state_to_params(self.block(params).state_dict())

    def prepared_vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Callable[[], list[torch.Tensor]]:
        """`vjp`'s call: the wrapped model and tensors made here, once; the callable runs the
        model and its backward pass (`prepared_grads`: x's gradient first, then each weight's)."""
        net, x = self.model(params, checkpoint), leaf_input(x)
        block = net.get_submodule("block")  # the original block, even under a wrapper
        weights = [_unwrapped(block).get_parameter(name) for name in STATE_NAMES]
        return prepared_grads(self, net, x, weights, cotangent)

    def exercise(self, seed: Any, x: Any, features: Any, **build: Any) -> tuple[torch.Tensor, Any]:
        return exercise_of(self, seed, x, features)


def _unwrapped(module: nn.Module) -> nn.Module:
    # A CheckpointWrapper keeps the module in `_checkpoint_wrapped_module` (maybe wrapped again).
    while hasattr(module, "_checkpoint_wrapped_module"):
        module = module._checkpoint_wrapped_module
    return module


nn_checkpoint_forward = TorchAcWrapper.exported()
