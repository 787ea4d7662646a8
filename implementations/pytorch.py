"""The PyTorch port: `torch.utils.checkpoint` (non-reentrant) around a two-layer MLP.

Its parameters are Flax's canonical ones, computed without JAX by the numpy
init (`_canonical_init`). torch's `Linear.weight` is `(out, in)`, the
canonical kernel transposed; `params_to_state` and `state_to_params` convert,
with shape checks. Its evidence comes from torch's own instruments
(`_torch.evidence`: saved-tensor hooks, a dispatch mode, `context_fn`).
Imports torch, numpy and the project's numpy-only modules, never jax.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint as torch_checkpoint

from ._canonical_init import canonical_params
from ._torch import arrays, evidence
from ._torch.arrays import as_input, from_host_array, leaf_input, to_host_array
from .contract import BackwardRecord, Grads, Implementation, Params, check_features, check_seed

# The MLP's state dict names, in the canonical order w1, b1, w2, b2.
STATE_NAMES = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


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
    - `context_fn`: passed on to `checkpoint` (e.g. to count its regions).
    """

    def __init__(
        self,
        fc1: nn.Linear,
        fc2: nn.Linear,
        *,
        checkpoint: bool = True,
        context_fn: Callable[[], tuple[Any, Any]] | None = None,
    ):
        super().__init__()
        self.fc1, self.fc2 = fc1, fc2
        self.checkpoint = checkpoint
        self.context_fn = context_fn

    def _needs_grad(self, x: torch.Tensor) -> bool:
        # Autograd records a graph only if something requires grad; without
        # one there is nothing to save, so there is nothing to checkpoint.
        if not torch.is_grad_enabled():
            return False
        return x.requires_grad or any(p.requires_grad for p in self.parameters())

    def block(self, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        return self.fc2(torch.relu(self.fc1(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        if not (self.checkpoint and self._needs_grad(x)):
            return self.block(x)
        extra = {} if self.context_fn is None else {"context_fn": self.context_fn}
        # Non-reentrant, as torch recommends (leaving use_reentrant out warns).
        # The block draws no random numbers: no RNG state to stash and restore.
        return torch_checkpoint(
            self.block, x, use_reentrant=False, preserve_rng_state=False, **extra
        )


# ---------------------------------------------------------------------------
# Layout converters: canonical kernel (in, out) <-> torch weight (out, in)
# ---------------------------------------------------------------------------


def _tensor(array: np.ndarray, device: Any = None) -> torch.Tensor:
    # A fresh, writable, C-contiguous float32 copy: the canonical arrays are
    # read-only, and the tensor must not share their memory.
    tensor = torch.from_numpy(np.array(array, dtype=np.float32, order="C"))
    return tensor if device is None else tensor.to(device)


def params_to_state(params: Params, device: Any = None) -> dict[str, torch.Tensor]:
    """Canonical params as the MLP's state dict: each `Linear.weight` is the kernel transposed."""
    dim, features = params.dim, params.features
    w1 = _tensor(params.w1.T, device)  # (D, F) -> (F, D)
    w2 = _tensor(params.w2.T, device)  # (F, F) -> (F, F), transposed
    assert w1.shape == (features, dim), w1.shape
    assert w2.shape == (features, features), w2.shape
    return {
        "fc1.weight": w1,
        "fc1.bias": _tensor(params.b1, device),  # (F,)
        "fc2.weight": w2,
        "fc2.bias": _tensor(params.b2, device),  # (F,)
    }


def _canonical_arrays(state: Mapping[str, torch.Tensor]) -> dict[str, np.ndarray]:
    # Tensors in the MLP's layout (weights or their gradients) as canonical arrays.
    w1, b1, w2, b2 = (to_host_array(state[name]) for name in STATE_NAMES)
    if w1.ndim != 2:
        raise ValueError(f"fc1.weight must be 2-D (F, D), got shape {w1.shape}")
    features, dim = w1.shape
    expected = {"fc1.weight": (features, dim), "fc1.bias": (features,)}
    expected |= {"fc2.weight": (features, features), "fc2.bias": (features,)}
    for name, array in zip(STATE_NAMES, (w1, b1, w2, b2), strict=True):
        if array.shape != expected[name]:
            raise ValueError(f"{name} must have shape {expected[name]}, got {array.shape}")
    return {"w1": w1.T, "b1": b1, "w2": w2.T, "b2": b2}  # (F, D) -> (D, F); (F, F) transposed


def state_to_params(state: Mapping[str, torch.Tensor]) -> Params:
    """The MLP's state dict (or any mapping with its names) as canonical params."""
    return Params(**_canonical_arrays(state))


def build_mlp(
    params: Params,
    *,
    checkpoint: bool = True,
    device: Any = None,
    context_fn: Callable[[], tuple[Any, Any]] | None = None,
) -> MLP:
    """An `MLP` holding `params`, on `device` (the CPU by default)."""
    state = params_to_state(params, device)
    return MLP(
        CanonicalLinear(state["fc1.weight"], state["fc1.bias"]),
        CanonicalLinear(state["fc2.weight"], state["fc2.bias"]),
        checkpoint=checkpoint,
        context_fn=context_fn,
    )


# ---------------------------------------------------------------------------
# Inputs and the exercise
# ---------------------------------------------------------------------------


def _exercise(
    seed: Any, x: Any, features: Any, context_fn: Callable[[], tuple[Any, Any]] | None = None
) -> tuple[torch.Tensor, MLP]:
    seed, features = check_seed(seed), check_features(features)
    x = as_input(x)
    params = canonical_params(seed, x.shape[0], features)
    model = build_mlp(params, device=x.device, context_fn=context_fn)
    if not x.requires_grad:
        # The parameters are made here and never returned: as in Flax's
        # exercise, only x can be differentiated. Freezing them when x needs
        # no grad spares building a graph (and a checkpoint) nobody can use.
        model.requires_grad_(False)
    return model(x), model  # (D,) -> (F,)


def nn_checkpoint_forward(seed: Any, x: Any, features: Any) -> torch.Tensor:
    """The exercise: Flax's canonical MLP for `PRNGKey(seed)`, applied to x through a checkpoint.

    **Arguments:**

    - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
    - `x`: a finite real vector of shape `(D,)`: a tensor on any device, a
      numpy array or a list. It is never modified, and gradients flow back
      to it when it requires grad.
    - `features`: the width F, a positive integer-valued scalar.

    **Returns:** the `(F,)` float32 output, on x's device (the CPU for non-tensors).
    """
    return _exercise(seed, x, features)[0]


# ---------------------------------------------------------------------------
# The port
# ---------------------------------------------------------------------------


class PyTorch(Implementation):
    """The PyTorch port: `torch.utils.checkpoint(..., use_reentrant=False)` around an MLP."""

    name = "pytorch"
    framework = "torch"
    distributions = ("torch",)

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The numpy canonical init, loaded into the torch module and exported
        # again, so that the layout converters are part of what is checked.
        params = canonical_params(seed, dim, features)
        return state_to_params(build_mlp(params).state_dict())

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        model = build_mlp(params, checkpoint=checkpoint)
        return to_host_array(model(as_input(x)))  # grad stays on: the checkpoint runs

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        model = build_mlp(params, checkpoint=checkpoint)
        x = leaf_input(x)
        out = model(x)
        leaves = [x, *(model.get_parameter(name) for name in STATE_NAMES)]
        grads = torch.autograd.grad(out, leaves, _tensor(np.asarray(cotangent)))
        canonical = _canonical_arrays(dict(zip(STATE_NAMES, grads[1:], strict=True)))
        return Grads(**canonical, x=to_host_array(grads[0]))

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        regions = evidence.RegionCounter()
        model = build_mlp(params, checkpoint=checkpoint, context_fn=regions.context_fn)
        x = leaf_input(x)
        return evidence.record(lambda: (model(x), model), x, regions)

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        regions = evidence.RegionCounter()
        x = leaf_input(x)
        return evidence.record(lambda: _exercise(seed, x, features, regions.context_fn), x, regions)

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> torch.Tensor:
        return nn_checkpoint_forward(seed, x, features)

    def to_numpy(self, array: Any) -> np.ndarray:
        return to_host_array(array)

    def from_numpy(self, array: np.ndarray) -> torch.Tensor:
        return from_host_array(array)

    def pin_matmul_precision(self) -> None:
        arrays.pin_matmul_precision()

    def matmul_precision(self) -> dict[str, str]:
        return arrays.matmul_precision()
