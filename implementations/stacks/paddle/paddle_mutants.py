"""Mutants of the Paddle port: the recompute left out, and the porter's own model, never
recomputed."""

from __future__ import annotations

from typing import Any

import numpy as np

from implementations.contract import Grads, Params
from implementations.stacks.paddle import from_host_array, leaf_input, to_host_array
from implementations.stacks.paddle.loaded import paddle
from implementations.stacks.paddle.paddle import MLP, Paddle, exercise_model, state_to_params


class _PlainMLP(MLP):
    """The block without `recompute`, whatever `checkpoint` says."""

    def forward(self, x):
        return self.block(x)


class PaddleNoRecompute(Paddle):
    """`recompute` dropped: the same MLP and values, the activations kept."""

    mlp = _PlainMLP


def _plain_mlp(params: Params, x: paddle.Tensor) -> tuple[paddle.Tensor, list[paddle.Tensor]]:
    # A porter's own functional MLP: right values, no recompute anywhere.
    weights = [from_host_array(params.as_dict()[n]) for n in ("w1", "b1", "w2", "b2")]
    for weight in weights:
        weight.stop_gradient = False
    w1, b1, w2, b2 = weights
    hidden = paddle.nn.functional.relu(paddle.matmul(x, w1) + b1)
    return paddle.matmul(hidden, w2) + b2, weights  # (D,) -> (F,)


class OwnModelWithoutRecompute(Paddle):
    """`forward`, `vjp` and `nn_checkpoint_forward` overridden by a plain MLP of the port's own,
    while the base's model (`mlp`, its layer pool) still recomputes: the values are right, and
    only evidence read off the port's own call can tell."""

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        return to_host_array(_plain_mlp(params, leaf_input(x))[0])

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        x = leaf_input(x)
        out, weights = _plain_mlp(params, x)
        grads = paddle.grad(out, [x, *weights], from_host_array(np.asarray(cotangent, np.float32)))
        w1, b1, w2, b2 = (to_host_array(g) for g in grads[1:])
        return Grads(w1=w1, b1=b1, w2=w2, b2=b2, x=to_host_array(grads[0]))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> paddle.Tensor:
        # The base's checks and Flax's parameters; the computation is the port's own.
        x, model = exercise_model(seed, x, features)
        out, _ = _plain_mlp(state_to_params(model), x)
        return out
