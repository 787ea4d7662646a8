"""`PlainModel`: a mixin for mutants of the torch-based ports whose `forward`, `vjp` and
`nn_checkpoint_forward` are a porter's own plain MLP, never checkpointed (property (e)'s one
path: evidence read off any other model would pass them). Imports torch and numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ...contract import Grads, Params
from .arrays import leaf_input, to_host_array
from .mlp import exercise_model, state_to_params


def plain_mlp(params: Params, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A porter's own functional MLP on x, and its weights (w1, b1, w2, b2, each requiring
    grad): right values, no checkpoint anywhere."""
    weights = [
        torch.tensor(params.as_dict()[n], requires_grad=True) for n in ("w1", "b1", "w2", "b2")
    ]
    w1, b1, w2, b2 = weights
    return torch.relu(x @ w1 + b1) @ w2 + b2, weights  # (D,) -> (F,)


class PlainModel:
    """Put first among a mutant's bases: the value methods are `plain_mlp`, while the port's
    own model (its `model`, `run`, `exercise`) is left as it is, checkpoint and all."""

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        return to_host_array(plain_mlp(params, leaf_input(x))[0])

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        x = leaf_input(x)
        out, weights = plain_mlp(params, x)
        cotangent = torch.from_numpy(np.asarray(cotangent, np.float32))
        grads = torch.autograd.grad(out, [x, *weights], cotangent)
        w1, b1, w2, b2 = (to_host_array(g) for g in grads[1:])
        return Grads(w1=w1, b1=b1, w2=w2, b2=b2, x=to_host_array(grads[0]))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> torch.Tensor:
        # The base's checks and Flax's parameters; the computation is the porter's own.
        x, model = exercise_model(seed, x, features, checkpoint=False)
        return plain_mlp(state_to_params(model.state_dict()), x)[0]
