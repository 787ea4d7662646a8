"""Mutants of the canonical Flax linen port that get a remat policy wrong (issue 21).

Each keeps checkpoint=True/False exact, so that every property before (j) passes,
and breaks only what property (j) looks at: the policy it is given.
"""

from __future__ import annotations

from typing import ClassVar

import flax.linen as nn
import jax

from implementations.expectations import expect
from implementations.policies import FULL, NONE, Policy, as_policy
from implementations.stacks.jax.flax_linen import FlaxLinen
from implementations.stacks.jax.policies import tag


class DropsPolicy(FlaxLinen):
    """Takes any policy but none for full remat: the silent failure of a port that
    tests `if checkpoint:` and never reads the policy."""

    def apply(self, variables: dict, x: jax.Array, checkpoint: Policy) -> jax.Array:
        return super().apply(variables, x, FULL if as_policy(checkpoint) else NONE)


class NoneForSaveDots(FlaxLinen):
    """Runs no remat at all when asked to save the dots."""

    def apply(self, variables: dict, x: jax.Array, checkpoint: Policy) -> jax.Array:
        policy = as_policy(checkpoint)
        return super().apply(variables, x, NONE if policy.name == "save_dots" else policy)


class _TagsY(nn.Module):
    """The MLP with the `save_named` tag on the output y instead of h."""

    features: int

    @nn.compact
    def __call__(self, x):  # (D,) -> (F,)
        x = nn.relu(nn.Dense(self.features)(x))  # Dense_0
        return tag(nn.Dense(self.features)(x))  # Dense_1: y tagged "h"


class SavesYForNamed(FlaxLinen):
    """Under save_named saves y (the tag sits on the block's output), not h."""

    plain = _TagsY


class ContradictoryExpectations(FlaxLinen):
    """Declares its own expectations (as an outside port may), and full remat's keeps d1 as
    well as x: a declaration against the policy vocabulary, which (j) must reject before it
    compares any record with it. Everything it computes is the canonical port's."""

    instrument_family = "jax"
    expectations: ClassVar[dict] = {
        "none": expect("x a mask", 4, why="relu's gradient reads its mask, dW2 reads a"),
        "full": expect("x d1", 5, why="(wrong on purpose) full remat keeping d1"),
        "save_dots": expect("x d1", 4, why="dot_general's output saved"),
        "save_named": expect("x h", 4, why="h tagged and saved"),
        "offload_dots": expect("x d1", 4, host="d1", why="d1 moved to the host"),
    }
