"""Mutants of the plain JAX port's stateful block (`jax_checkpoint_stateful`), one bug each,
each in the block with variables and RNGs alone: property (l) must kill every one."""

from __future__ import annotations

import functools

import jax
import numpy as np

from implementations.stacks.jax import jax_checkpoint_stateful as state
from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint


@functools.lru_cache(maxsize=32)
def fresh_mask_remat(rate: float) -> state.Region:
    """A hand-written remat whose recompute draws its mask from another key, as torch's
    `preserve_rng_state=False` does from the moved global generator."""
    forward = functools.partial(state.block, rate=rate)

    @jax.custom_vjp
    def region(params, x, key):
        return forward(params, x, key)

    def keep_inputs(params, x, key):
        return forward(params, x, key), (params, x, key)

    def recompute(residuals, cotangent):
        params, x, key = residuals
        _, pullback = jax.vjp(lambda p, x: forward(p, x, jax.random.fold_in(key, 1)), params, x)
        grads, gx = pullback(cotangent)
        return grads, gx, np.zeros(key.shape, jax.dtypes.float0)

    region.defvjp(keep_inputs, recompute)
    return region


class FreshMaskOnRecompute(JaxCheckpoint):
    """The recompute draws a fresh mask: the forward's values are right, the gradients not."""

    def state_region(self, checkpoint, rate):
        return (
            fresh_mask_remat(rate)
            if checkpoint and rate > 0
            else super().state_region(checkpoint, rate)
        )


class UpdatedTwice(JaxCheckpoint):
    """With the checkpoint the running statistics are updated twice (torch eager's bug,
    pytorch#96136), while its stack declares one update."""

    def state_updates(self, checkpoint):
        return 2 if checkpoint else 1


@functools.lru_cache(maxsize=32)
def _unscaled(rate: float) -> state.Region:
    return jax.checkpoint(functools.partial(state.block, rate=rate, scaled=False))


@functools.lru_cache(maxsize=32)
def _unscaled_plain(rate: float) -> state.Region:
    return functools.partial(state.block, rate=rate, scaled=False)


class DropoutUnscaled(JaxCheckpoint):
    """Dropout keeps its elements unscaled (no 1 / (1 - rate))."""

    def state_region(self, checkpoint, rate):
        return _unscaled(rate) if checkpoint else _unscaled_plain(rate)


@functools.lru_cache(maxsize=32)
def _swapped(rate: float, checkpoint: bool) -> state.Region:
    region = functools.partial(state.block, rate=rate, swapped=True)
    return jax.checkpoint(region) if checkpoint else region


class DropoutKeepsTheRate(JaxCheckpoint):
    """Dropout keeps each element with the probability `rate`, not 1 - rate (the keep and
    drop probabilities swapped), and scales by 1 / (1 - rate): its values are right for the
    mask it drew, and at rate 0.5 its law is too."""

    def state_region(self, checkpoint, rate):
        return _swapped(rate, bool(checkpoint))


class CheckpointAdvancesRng(JaxCheckpoint):
    """The checkpoint splits the key once more: the next step's key differs with it on."""

    def state_splits(self, checkpoint):
        return 2 if checkpoint else 1


class MomentumConventionSwapped(JaxCheckpoint):
    """Flax's momentum 0.99 applied in torch's convention: 0.99 of the batch taken."""

    state_kept = 1.0 - state.MOMENTUM
