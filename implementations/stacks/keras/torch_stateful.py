"""Keras 3 on torch: the block with variables and RNGs (issue 78) made inside
`keras.RematScope(mode="full")`, one training step, watched by torch's instrument.

Import it once Keras runs on torch (`keras_torch` does). The block is `Dense(F) ->
BatchNormalization -> relu -> Dropout(rate) -> Dense(F)`, one region: the block is made inside
the scope, its layers under `RematScope(mode=None)` (as the MLP's, `model.py`). Dense kernels
are `(in, out)`, the canonical layout, given as initializers (no draw); BatchNormalization has
Keras's momentum convention (0.99, the old value kept: the canonical's), `epsilon` 1e-5, the
biased batch variance, `gamma` 1, `beta` 0, moving mean 0 and variance 1.

**Seeding.** `Dropout(rate, seed=seed)` owns a `keras.random.SeedGenerator(seed)`, a Keras
variable `[seed, counter]`: each draw reads it and adds one to the counter, and the mask comes
from a `torch.Generator` seeded from the two. torch's checkpoint stashes torch's own RNG state,
not this variable, so the recompute draws the counter's next mask. The stream's fingerprint is
the variable's value.

**The instrument** is torch's (`implementations.stacks.torch.stateful.Draws` on the stack's one
`Ops`): the masks (`aten.bernoulli`) of each pass, and the writes into the moving mean's
storage (Keras assigns it with `copy_`).
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import torch
from keras import layers, ops

from ...stateful import EPSILON, MOMENTUM, StateStep
from ..numpy import canonical_params
from ..torch.instrument import Ops
from ..torch.stateful import Draws, check_step, seen_step
from .model import _Given

#: Keras's `SeedGenerator` keeps its seed in an int32 variable on torch: seeds are taken modulo.
KERAS_SEEDS = 2**31


class Block(layers.Layer):
    """`Dense -> BatchNormalization -> relu -> Dropout -> Dense` on a `(B, D)` x: one region
    where it is made inside `RematScope(mode="full")`."""

    def __init__(self, seed: int, dim: int, features: int, rate: float):
        super().__init__(dtype="float32")  # reads the RematScope in force
        p = canonical_params(seed, dim, features)
        with keras.RematScope(mode=None):  # no regions of their own inside the block's
            self.dense_0 = layers.Dense(
                features, kernel_initializer=_Given(p.w1), bias_initializer=_Given(p.b1)
            )
            self.bn = layers.BatchNormalization(momentum=MOMENTUM, epsilon=EPSILON)
            self.drop = layers.Dropout(rate, seed=seed % KERAS_SEEDS)
            self.dense_1 = layers.Dense(
                features, kernel_initializer=_Given(p.w2), bias_initializer=_Given(p.b2)
            )
        self.features = features

    def build(self, input_shape: tuple[int, ...]) -> None:  # (B, D)
        self.dense_0.build(input_shape)
        self.bn.build((input_shape[0], self.features))
        self.dense_1.build((input_shape[0], self.features))

    def call(self, x: Any, training: bool = True) -> Any:  # (B, D) -> (B, F)
        z = self.bn(self.dense_0(x), training=training)
        return self.dense_1(self.drop(ops.relu(z), training=training))

    def leaves(self) -> list[torch.Tensor]:
        """The parameters in the canonical order w1, b1, gamma, beta, w2, b2."""
        return [
            v.value
            for v in (
                self.dense_0.kernel,
                self.dense_0.bias,
                self.bn.gamma,
                self.bn.beta,
                self.dense_1.kernel,
                self.dense_1.bias,
            )
        ]


def fingerprint(block: Block) -> tuple[int, ...]:
    """The dropout's `SeedGenerator` state, `(seed, counter)`; `()` at rate 0, where Keras's
    `Dropout` makes no generator (it draws nothing)."""
    generator = getattr(block.drop, "seed_generator", None)
    if generator is None:
        return ()
    return tuple(int(v) for v in np.asarray(generator.state.value.cpu()))


def state_step(
    seed: Any, x: Any, features: Any, rate: Any, cotangent: Any, checkpoint: bool
) -> StateStep:
    """One training step of the block, made inside `RematScope(mode="full")` (`checkpoint`) or
    `RematScope(mode=None)`."""
    seed, x, features, rate, cotangent = check_step(seed, x, features, rate, cotangent)
    with keras.RematScope(mode="full" if checkpoint else None):
        block = Block(seed, x.shape[1], features, rate)
    block.build(x.shape)
    x_leaf = torch.from_numpy(x).requires_grad_(True)
    leaves = [*block.leaves(), x_leaf]
    draws = Draws(block.bn.moving_mean.value)
    before = fingerprint(block)
    with Ops(throughout=(draws,)):
        y = block(x_leaf, training=True)
        y.backward(torch.from_numpy(cotangent))
    grads = dict(
        zip(
            ("w1", "b1", "gamma", "beta", "w2", "b2", "x"),
            (leaf.grad.detach().cpu().numpy() for leaf in leaves),
            strict=True,
        )
    )
    running = (block.bn.moving_mean.value, block.bn.moving_variance.value)
    return seen_step(y, grads, draws, rate, running, {}, (before, fingerprint(block)))
