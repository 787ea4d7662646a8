"""The block with variables and RNGs in plain JAX: pure functions, `jax.checkpoint` around them.

The parameters and statistics are dicts of arrays by canonical name; the dropout key is the
caller's, threaded as JAX programs thread keys: each step splits it, draws from the second
half and hands the first back as the key of the next step (the port's RNG state after the
step). Flax's BatchNorm in arithmetic: batch mean and biased variance, `epsilon = 1e-5`, the
running statistics updated once with momentum 0.99 (the share of the old value kept).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from ...stateful import DEFAULT_VARIANT, EPSILON, MOMENTUM, STATE_PARAM_NAMES, StateStep
from . import stateful as front

Tree = dict[str, Any]
#: A region: `(params, x, key) -> (y, (batch mean, batch variance))`.
Region = Callable[[Tree, jax.Array, jax.Array], tuple[jax.Array, tuple[jax.Array, jax.Array]]]


def block(
    params: Tree, x: jax.Array, key: jax.Array, rate: float, scaled: bool = True,
    swapped: bool = False,
):  # fmt: skip
    """`Dense -> BatchNorm -> relu -> Dropout(rate) -> Dense` on `(B, D)`: `(y, (mean, var))`.
    `scaled=False` drops the 1 / (1 - rate), `swapped=True` keeps with the probability `rate`
    (two mutants' bugs)."""
    # Every broadcast explicit ([None]): the suite's tests run with rank promotion refused.
    h = x @ params["w1"] + params["b1"][None]  # (B, D) @ (D, F) -> (B, F)
    mean = h.mean(0)
    var = jnp.mean(jnp.square(h - mean[None]), 0)  # biased, as Flax's
    inv = jax.lax.rsqrt(var + EPSILON)
    z = (h - mean[None]) * (inv * params["gamma"])[None] + params["beta"][None]
    a = jax.nn.relu(z)
    if rate > 0.0:
        mask = jax.random.bernoulli(key, rate if swapped else 1.0 - rate, a.shape)
        a = jnp.where(mask, a / (1.0 - rate) if scaled else a, 0.0)
    return a @ params["w2"] + params["b2"][None], (mean, var)


@functools.lru_cache(maxsize=32)
def checkpointed(rate: float) -> Region:
    """`jax.checkpoint(block)` at `rate`: its recompute runs the random ops on the same key."""
    return jax.checkpoint(functools.partial(block, rate=rate))


@functools.lru_cache(maxsize=32)
def plain(rate: float) -> Region:
    """The block at `rate`, no checkpoint."""
    return functools.partial(block, rate=rate)


def update(stats: Tree, batch: tuple[jax.Array, jax.Array], kept: float = MOMENTUM) -> Tree:
    """One update of the running statistics: `kept` of the old value, the rest the batch's."""
    mean, var = batch
    return {"mean": kept * stats["mean"] + (1 - kept) * mean,
            "var": kept * stats["var"] + (1 - kept) * var}  # fmt: skip


def compiled_step(region: Region, updates: int = 1, kept: float = MOMENTUM, splits: int = 1):
    """One training step through `region`: `(params, stats, x, key, cotangent) -> (y, grads,
    x's gradient, new stats, next key)`, jitted. `updates` updates of the statistics, the key
    split `splits` times (the mutants change them)."""

    def step(params, stats, x, key, cotangent):
        for _ in range(splits):
            key, draw = jax.random.split(key)
        y, pullback, batch = jax.vjp(lambda p, x: region(p, x, draw), params, x, has_aux=True)
        grads, gx = pullback(cotangent)
        for _ in range(updates):
            stats = update(stats, batch, kept)
        return y, grads, gx, stats, key

    return jax.jit(step, compiler_options=front.STEP_COMPILE)


cached_step = functools.lru_cache(maxsize=64)(compiled_step)


class StatefulBlock(front.StatefulFront):
    """`state_step` for a port on these functions (the plain JAX port and its mutants): the
    region, the number of updates and of key splits, and the momentum are its methods."""

    state_variants: ClassVar[dict[str, str]] = {
        DEFAULT_VARIANT: "jax.checkpoint(block), the key split once per step"
    }
    #: The share of the old running value kept (Flax's convention).
    state_kept: float = MOMENTUM

    def state_region(self, checkpoint: bool, rate: float) -> Region:
        return checkpointed(rate) if checkpoint else plain(rate)

    def state_updates(self, checkpoint: bool) -> int:
        return 1

    def state_splits(self, checkpoint: bool) -> int:
        return 1

    def run_state_step(self, seed, x, features, rate, cotangent, checkpoint: bool) -> StateStep:
        """One training step from `seed`'s parameters and dropout key."""
        seed, x, features, rate, cotangent = front.checked(seed, x, features, rate, cotangent)
        arrays = front.initial(seed, x.shape[1], features)
        params = {name: arrays[name] for name in STATE_PARAM_NAMES}
        stats = {"mean": arrays["mean"], "var": arrays["var"]}
        key = front.dropout_key(seed)
        step = cached_step(
            self.state_region(checkpoint, rate), self.state_updates(checkpoint), self.state_kept,
            self.state_splits(checkpoint),
        )  # fmt: skip
        with front.observed_masks() as masks:
            y, grads, gx, stats, after = step(params, stats, x, key, cotangent)
            jax.block_until_ready((y, grads, gx, stats, after))
        return front.make_step(
            y, {**grads, "x": gx}, masks, stats["mean"], stats["var"], rate=rate, before=key,
            after=after,
        )  # fmt: skip
