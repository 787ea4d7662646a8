"""The torch MLP, its layout converters, and the exercise's model. Imports torch and numpy.

torch's `Linear.weight` is `(out, in)`, the canonical kernel transposed;
`params_to_state` and `state_to_params` convert, with shape checks. The
eager port (`pytorch`) runs this module as it is; the compiled port
(`torch_compile`) runs the same module under `torch.compile`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint as torch_checkpoint

from ...contract import Params, check_features, check_seed, check_sizes
from ..numpy import canonical_params, out_in
from .arrays import as_input, to_host_array
from .policies import tag

# The MLP's state dict names, in the canonical order w1, b1, w2, b2.
STATE_NAMES = out_in.NAMES  # the MLP's state dict names, in the canonical order


class CanonicalLinear(nn.Linear):
    """An `nn.Linear` made from a given `(out, in)` weight and `(out,)` bias."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        # nn.Linear.__init__ would allocate and kaiming-initialise weights that
        # are overwritten at once; skip_init and the meta device cost even more
        # (hundreds of microseconds in torch 2.13). Set what it would set.
        nn.Module.__init__(self)
        self.out_features, self.in_features = weight.shape
        assert bias.shape == (self.out_features,), (bias.shape, weight.shape)
        self.weight = nn.Parameter(weight)
        self.bias = nn.Parameter(bias)


class MLP(nn.Module):
    """`Linear(D, F)` -> relu -> `Linear(F, F)`, its forward pass under `torch.utils.checkpoint`.

    **Arguments:**

    - `fc1`, `fc2`: the two layers.
    - `checkpoint`: whether a forward pass that needs grad goes through
      `torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`. Without
      grad (grad mode off, or nothing requiring it) there is nothing to save,
      and the checkpoint is skipped.
    - `context_fn`: passed on to `checkpoint` (e.g. to count its regions, or
      a selective-checkpoint policy).
    - `tag_h`: whether h goes through the `tag` operator, which a
      `save_named` policy saves (torch has no names of its own).
    - `nesting`: the composition case (`implementations.composition`): `once`, the block
      in one checkpoint; `twice`, that checkpoint inside another around the same block;
      `under_trainer`, the module's whole call inside an outer checkpoint, as a trainer's
      activation checkpointing wraps a model that checkpoints its own blocks.
    """

    def __init__(
        self,
        fc1: nn.Linear,
        fc2: nn.Linear,
        *,
        checkpoint: bool = True,
        context_fn: Callable[[], tuple[Any, Any]] | None = None,
        tag_h: bool = False,
        nesting: str = "once",
    ):
        super().__init__()
        self.fc1, self.fc2 = fc1, fc2
        self.checkpoint = checkpoint
        self.context_fn = context_fn
        self.tag_h = tag_h
        self.nesting = nesting

    def _needs_grad(self, x: torch.Tensor) -> bool:
        # Autograd records a graph only if something requires grad; without
        # one there is nothing to save, so there is nothing to checkpoint.
        if not torch.is_grad_enabled():
            return False
        return x.requires_grad or any(p.requires_grad for p in self.parameters())

    def block(self, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        h = self.fc1(x)
        return self.fc2(torch.relu(tag(h) if self.tag_h else h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        if not (self.checkpoint and self._needs_grad(x)):
            return self.block(x)
        if self.nesting == "under_trainer":  # the trainer's region over the model's call
            return self._checkpoint(self._model_call, x)
        if self.nesting == "twice":  # the same region, wrapped again
            return self._checkpoint(functools.partial(self._checkpoint, self.block), x)
        return self._checkpoint(self.block, x)

    def _model_call(self, x: torch.Tensor) -> torch.Tensor:  # the model, its own region in
        return self._checkpoint(self.block, x)

    def _checkpoint(self, function: Callable, x: torch.Tensor) -> torch.Tensor:
        extra = {} if self.context_fn is None else {"context_fn": self.context_fn}
        # Non-reentrant, as torch recommends (leaving use_reentrant out warns).
        # The block draws no random numbers: no RNG state to stash and restore.
        return torch_checkpoint(function, x, use_reentrant=False, preserve_rng_state=False, **extra)


# ---------------------------------------------------------------------------
# Layout converters: canonical kernel (in, out) <-> torch weight (out, in)
# ---------------------------------------------------------------------------


def tensor(array: np.ndarray, device: Any = None) -> torch.Tensor:
    """A fresh, writable, C-contiguous float32 tensor copy of a numpy array.

    The canonical arrays are read-only, and the tensor must not share their memory.
    """
    result = torch.from_numpy(np.array(array, dtype=np.float32, order="C"))
    return result if device is None else result.to(device)


def params_to_state(params: Params, device: Any = None) -> dict[str, torch.Tensor]:
    """Canonical params as the MLP's state dict: each `Linear.weight` is the kernel transposed."""
    return {name: tensor(array, device) for name, array in out_in.from_params(params).items()}


def state_to_params(state: Mapping[str, torch.Tensor]) -> Params:
    """The MLP's state dict (or any mapping with its names) as canonical params."""
    return out_in.to_params(state, to_host_array)


def build_mlp(
    params: Params,
    *,
    checkpoint: bool = True,
    device: Any = None,
    context_fn: Callable[[], tuple[Any, Any]] | None = None,
    tag_h: bool = False,
    nesting: str = "once",
) -> MLP:
    """An `MLP` holding `params`, on `device` (the CPU by default)."""
    state = params_to_state(params, device)
    return MLP(
        CanonicalLinear(state["fc1.weight"], state["fc1.bias"]),
        CanonicalLinear(state["fc2.weight"], state["fc2.bias"]),
        checkpoint=checkpoint,
        context_fn=context_fn,
        tag_h=tag_h,
        nesting=nesting,
    )


def exercise_model(seed: Any, x: Any, features: Any, **build: Any) -> tuple[torch.Tensor, MLP]:
    """The exercise's checked x and its model: Flax's canonical MLP for `PRNGKey(seed)`.

    Checks every argument first (the contract's errors, naming it), then
    builds the checkpointed MLP on x's device. `build` goes to `build_mlp`.
    **Returns:** `(x as a float32 (D,) tensor, the model)`.
    """
    seed, features = check_seed(seed), check_features(features)
    x = as_input(x)
    check_sizes(x.shape[0], features)
    params = canonical_params(seed, x.shape[0], features)
    model = build_mlp(params, device=x.device, **build)
    if not x.requires_grad:
        # The parameters are made here and never returned: as in Flax's
        # exercise, only x can be differentiated. Freezing them when x needs
        # no grad spares building a graph (and a checkpoint) nobody can use.
        model.requires_grad_(False)
    return x, model
