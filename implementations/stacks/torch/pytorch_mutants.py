"""Mutants of the eager PyTorch port: the porter's own model, never checkpointed."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from implementations.contract import Grads, Params
from implementations.stacks.torch.arrays import leaf_input, to_host_array
from implementations.stacks.torch.mlp import exercise_model, state_to_params
from implementations.stacks.torch.pytorch import PyTorch


def _plain_mlp(params: Params, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    # A porter's own functional MLP: right values, no torch.utils.checkpoint anywhere.
    weights = [
        torch.tensor(params.as_dict()[n], requires_grad=True) for n in ("w1", "b1", "w2", "b2")
    ]
    w1, b1, w2, b2 = weights
    return torch.relu(x @ w1 + b1) @ w2 + b2, weights  # (D,) -> (F,)


class OwnModelWithoutCheckpoint(PyTorch):
    """`forward`, `vjp` and `nn_checkpoint_forward` overridden by a plain MLP of the port's own,
    while the base's model (`model()`, `run()`) still checkpoints: the values are right, and
    only evidence read off the port's own call can tell."""

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        return to_host_array(_plain_mlp(params, leaf_input(x))[0])

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        x = leaf_input(x)
        out, weights = _plain_mlp(params, x)
        cotangent = torch.from_numpy(np.asarray(cotangent, np.float32))
        grads = torch.autograd.grad(out, [x, *weights], cotangent)
        w1, b1, w2, b2 = (to_host_array(g) for g in grads[1:])
        return Grads(w1=w1, b1=b1, w2=w2, b2=b2, x=to_host_array(grads[0]))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> torch.Tensor:
        # The base's checks and Flax's parameters; the computation is the port's own.
        x, model = exercise_model(seed, x, features, checkpoint=False)
        return _plain_mlp(state_to_params(model.state_dict()), x)[0]
