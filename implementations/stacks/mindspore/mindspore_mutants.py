"""Mutants of the MindSpore port: `Cell.recompute()` left out, and the porter's own model,
never recomputed."""

from __future__ import annotations

from typing import Any

import numpy as np

from implementations.contract import Grads, Params
from implementations.stacks.mindspore import (
    as_input,
    exercise_model,
    from_host_array,
    ms,
    state_to_params,
    to_host_array,
)
from implementations.stacks.mindspore.mindspore import MLP, MindSpore


class _NoRecomputeMLP(MLP):
    """`Cell.recompute()` made a no-op: the cell is never marked for recomputation."""

    def recompute(self, **kwargs):
        return None


class MindSporeNoRecompute(MindSpore):
    """`Cell.recompute()` dropped: the same cell and values, the activations kept."""

    mlp = _NoRecomputeMLP


def _plain_mlp(params: Params, x: ms.Tensor, *weights: ms.Tensor) -> ms.Tensor:
    # A porter's own functional MLP: right values, no recompute anywhere.
    w1, b1, w2, b2 = weights
    return ms.ops.matmul(ms.ops.relu(ms.ops.matmul(x, w1) + b1), w2) + b2  # (D,) -> (F,)


def _tensors(params: Params) -> list[ms.Tensor]:
    return [from_host_array(params.as_dict()[n]) for n in ("w1", "b1", "w2", "b2")]


class OwnModelWithoutRecompute(MindSpore):
    """`forward`, `vjp` and `nn_checkpoint_forward` overridden by a plain MLP of the port's own,
    while the base's model (`mlp`, its cell pool) still recomputes: the values are right, and
    only evidence read off the port's own call can tell."""

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        return to_host_array(_plain_mlp(params, as_input(x), *_tensors(params)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        def plain(x, *weights):
            return _plain_mlp(params, x, *weights)

        _, vjp_fn = ms.vjp(plain, as_input(x), *_tensors(params))
        dx, *grads = vjp_fn(from_host_array(np.asarray(cotangent, np.float32)))
        return Grads(*(to_host_array(g) for g in grads), x=to_host_array(dx))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> ms.Tensor:
        # The base's checks and Flax's parameters; the computation is the port's own.
        x, model = exercise_model(seed, x, features)
        params = state_to_params(model)
        return _plain_mlp(params, x, *_tensors(params))
