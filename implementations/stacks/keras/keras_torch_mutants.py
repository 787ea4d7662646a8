"""Mutants of the Keras port on the torch backend. Loading them loads Keras on torch, so
in a process where Keras runs on another backend they are unavailable
(`contract.StackUnavailable`) and run in a process of their own."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from implementations.contract import Grads, Params, check_exercise
from implementations.stacks.keras import keras_torch as port
from implementations.stacks.keras import model
from implementations.stacks.numpy import canonical_params
from implementations.stacks.torch import as_input, leaf_input, to_host_array


class RematScopeNone(port.KerasTorch):
    """The model made under `keras.RematScope(mode=None)`: Keras's way to turn remat off."""

    mode = None


def _plain_mlp(params: Params, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    # A porter's own functional MLP: right values, no Keras model, no checkpoint anywhere.
    weights = [torch.tensor(a, requires_grad=True) for a in params.as_dict().values()]
    w1, b1, w2, b2 = weights
    return torch.relu(x @ w1 + b1) @ w2 + b2, weights  # (D,) -> (F,)


class OwnModelWithoutCheckpoint(port.KerasTorch):
    """`forward`, `vjp` and `nn_checkpoint_forward` overridden by a plain torch MLP of the
    port's own, while the base's Keras model (`reused`, under `RematScope("full")`) still
    checkpoints: the values are right, and only evidence read off the port's own call can
    tell."""

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        self.policy(checkpoint)  # an undeclared policy still raises, naming `checkpoint`
        return to_host_array(_plain_mlp(params, leaf_input(x))[0])

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        self.policy(checkpoint)
        x = leaf_input(x)
        out, weights = _plain_mlp(params, x)
        cotangent = torch.from_numpy(np.asarray(cotangent, np.float32))
        dx, *grads = torch.autograd.grad(out, [x, *weights], cotangent)
        return Grads.of(Params(*(to_host_array(g) for g in grads)), to_host_array(dx))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> Any:
        if model.is_symbolic(x):  # the base's symbolic path; the bug is in the eager one
            return super().nn_checkpoint_forward(seed, x, features)
        seed, x, features = check_exercise(seed, model.unwrap(x), features, as_input)
        return _plain_mlp(canonical_params(seed, x.shape[0], features), x)[0]
