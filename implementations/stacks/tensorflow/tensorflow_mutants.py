"""Mutants of the TensorFlow port: the checkpoint left out, and the porter's own model, never
checkpointed. Imports TensorFlow (through the port)."""

from __future__ import annotations

from typing import Any

import numpy as np

from implementations.contract import Grads, Params
from implementations.stacks.tensorflow import float32_tensor, tf, to_host_array
from implementations.stacks.tensorflow import tensorflow as port


class NoRecomputeGrad(port.TensorFlow):
    """`tf.recompute_grad` left out: the plain block where the checkpoint should be."""

    region = staticmethod(port.block)


def _plain_mlp(x: tf.Tensor, w1, b1, w2, b2) -> tf.Tensor:
    # A porter's own MLP in TensorFlow ops: right values, no tf.recompute_grad anywhere.
    return tf.reshape(tf.nn.relu(x[tf.newaxis] @ w1 + b1) @ w2 + b2, [-1])  # (D,) -> (F,)


class OwnModelWithoutCheckpoint(port.TensorFlow):
    """`forward`, `vjp` and `nn_checkpoint_forward` overridden by a plain MLP of the port's own,
    run eagerly, while the base's block (`region`) still checkpoints: the values are right,
    and only evidence read off the port's own call can tell."""

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        return to_host_array(_plain_mlp(float32_tensor(x), *port.params_to_tensors(params)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        x, tensors = float32_tensor(x), port.params_to_tensors(params)
        with tf.GradientTape() as tape:
            tape.watch([x, *tensors])
            y = _plain_mlp(x, *tensors)
        dx, *grads = tape.gradient(y, [x, *tensors], output_gradients=float32_tensor(cotangent))
        return Grads.of(port.tensors_to_params(grads), to_host_array(dx))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> tf.Tensor:
        # The base's checks and Flax's parameters; the computation is the port's own.
        return port.exercise(seed, x, features, region=_plain_mlp)
