"""Mutants of the MLX port: the checkpoint left out, and the porter's own model, never
checkpointed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mlx.core as mx
import numpy as np

from implementations.contract import Params
from implementations.stacks.mlx import as_input, no_tap, to_host_array
from implementations.stacks.mlx.mlx import (
    MLP,
    Mlx,
    Pullback,
    _array,
    _exercise,
    params_to_arrays,
)


class _PlainMLP(MLP):
    """The block without `nn.utils.checkpoint`, whatever `checkpoint` says."""

    def __call__(self, x):
        return self.block(x)


class MlxNoCheckpoint(Mlx):
    """`nn.utils.checkpoint` dropped: the same MLP and values, the activations kept."""

    mlp = _PlainMLP


def _plain_mlp(w1: mx.array, b1: mx.array, w2: mx.array, b2: mx.array, x: mx.array) -> mx.array:
    # A porter's own MLP in mlx.core ops (MLX layout, weights (out, in)): no checkpoint anywhere.
    return mx.maximum(x @ w1.T + b1, 0.0) @ w2.T + b2  # (D,) -> (F,)


class _PlainModule:
    """The porter's own model where the exercise builds one: the plain MLP of its arrays."""

    def __init__(self, fc1, fc2, **ignored: Any):
        self.arrays = (fc1.weight, fc1.bias, fc2.weight, fc2.bias)

    def __call__(self, x: mx.array) -> mx.array:
        return _plain_mlp(*self.arrays, x)


class OwnModelWithoutCheckpoint(Mlx):
    """`forward`, `pullback` (what `vjp` evaluates) and `nn_checkpoint_forward` overridden by a
    plain MLP of the port's own, while the base's module (`mlp`) still checkpoints: the values
    are right, and only evidence read off the port's own graphs can tell."""

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        return to_host_array(_plain_mlp(*params_to_arrays(params).values(), as_input(x)))

    def pullback(
        self,
        params: Params,
        x: np.ndarray,
        cotangent: np.ndarray,
        *,
        checkpoint: Any = True,
        tap: Callable = no_tap,
    ) -> Pullback:
        primals = {**params_to_arrays(params), "x": as_input(x)}
        cotangent = _array(cotangent)
        mx.eval(list(primals.values()), cotangent)
        outputs, grads = mx.vjp(lambda *a: [_plain_mlp(*a)], list(primals.values()), [cotangent])
        return Pullback(outputs[0], grads, primals, cotangent)

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> mx.array:
        # The base's checks and Flax's parameters; the computation is the port's own.
        return _exercise(seed, x, features, mlp=_PlainModule)
