"""The canonical block with variables and RNGs: Flax linen, `nn.checkpoint(Block)`.

Block = `Dense(F) -> BatchNorm(use_running_average=False) -> relu -> Dropout(rate) ->
Dense(F)`, Flax's defaults (momentum 0.99, epsilon 1e-5). Init with `{'params':
PRNGKey(seed), 'dropout': dropout_key(seed)}` (Dense_0 and Dense_1 draw the first
exercise's parameters bit for bit), apply with `rngs={'dropout': dropout_key(seed)}` and
`mutable=['batch_stats']`. Every other port is held to the numpy computation of this block
for the mask it drew itself (`implementations.stateful_reference`); at rate 0, to this
module's results.
"""

from __future__ import annotations

import functools
from typing import Any

import flax.linen as nn
import jax
import numpy as np

from ...stateful import StateStep
from .stateful import STEP_COMPILE, checked, dropout_key, initial, make_step, observed_masks


class Block(nn.Module):
    """`Dense(F) -> BatchNorm -> relu -> Dropout(rate) -> Dense(F)`, in training mode."""

    features: int
    rate: float

    @nn.compact
    def __call__(self, x):  # (B, D) -> (B, F)
        x = nn.Dense(self.features)(x)  # Dense_0
        x = nn.BatchNorm(use_running_average=False)(x)  # BatchNorm_0: batch statistics
        x = nn.relu(x)
        x = nn.Dropout(self.rate, deterministic=False)(x)  # Dropout_0: the 'dropout' stream
        return nn.Dense(self.features)(x)  # Dense_1


# Wrap the class, not an instance (as the first exercise's nn.checkpoint(MLP)).
CheckpointBlock = nn.checkpoint(Block)


def to_variables(arrays: dict[str, Any]) -> dict:
    """Canonical arrays (`initial`'s names) as linen's variables."""
    return {
        "params": {
            "Dense_0": {"kernel": arrays["w1"], "bias": arrays["b1"]},
            "BatchNorm_0": {"scale": arrays["gamma"], "bias": arrays["beta"]},
            "Dense_1": {"kernel": arrays["w2"], "bias": arrays["b2"]},
        },
        "batch_stats": {"BatchNorm_0": {"mean": arrays["mean"], "var": arrays["var"]}},
    }


def to_grads(params: dict, gx: Any) -> dict[str, Any]:
    """linen's parameter gradients (and x's) by canonical name."""
    dense0, norm, dense1 = params["Dense_0"], params["BatchNorm_0"], params["Dense_1"]
    return {
        "w1": dense0["kernel"], "b1": dense0["bias"], "gamma": norm["scale"],
        "beta": norm["bias"], "w2": dense1["kernel"], "b2": dense1["bias"], "x": gx,
    }  # fmt: skip


@functools.lru_cache(maxsize=64)
def compiled_step(module: type[nn.Module], features: int, rate: float):
    """One training step of `module(features, rate)`: `(variables, x, key, cotangent) -> (y,
    params' and x's gradients, the new batch_stats)`, jitted."""
    model = module(features=features, rate=rate)

    def step(variables, x, key, cotangent):
        def forward(params, x):
            inputs = {"params": params, "batch_stats": variables["batch_stats"]}
            return model.apply(inputs, x, rngs={"dropout": key}, mutable=["batch_stats"])

        y, pullback, updated = jax.vjp(forward, variables["params"], x, has_aux=True)
        grads, gx = pullback(cotangent)
        return y, grads, gx, updated["batch_stats"]

    return jax.jit(step, compiler_options=STEP_COMPILE)


def linen_state_step(
    module: type[nn.Module], seed: Any, x: Any, features: Any, rate: Any, cotangent: Any
) -> StateStep:
    """The step of `module` (a Block-shaped linen class) from `seed`: Flax's init, then one
    step with the dropout key `dropout_key(seed)`, its masks observed as drawn."""
    seed, x, features, rate, cotangent = checked(seed, x, features, rate, cotangent)
    variables = to_variables(initial(seed, x.shape[1], features))
    key = dropout_key(seed)
    with observed_masks() as masks:
        y, grads, gx, stats = compiled_step(module, features, rate)(variables, x, key, cotangent)
        jax.block_until_ready((y, grads, gx, stats))
    # JAX's keys are values: the step reads the caller's key and cannot move it.
    return make_step(
        y, to_grads(grads, gx), masks, stats["BatchNorm_0"]["mean"],
        stats["BatchNorm_0"]["var"], rate=rate, before=key, after=key,
    )  # fmt: skip


def linen_init(seed: int, dim: int, features: int, rate: float) -> dict:
    """linen's own init of `nn.checkpoint(Block)` (what `initial` must equal, bit for bit)."""
    root = jax.random.PRNGKey(np.int64(seed))
    rngs = {"params": root, "dropout": dropout_key(seed)}
    return jax.jit(CheckpointBlock(features, rate).init)(rngs, np.zeros((2, dim), np.float32))
