"""Mutants of the plain JAX port: the porter's own computation, never checkpointed."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from implementations.contract import PARAM_NAMES, Params
from implementations.policies import Policy
from implementations.stacks.jax import CompiledExercise
from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint, block


def _plain(arrays: tuple[Any, ...], x: jax.Array) -> jax.Array:
    # The port's own block with no jax.checkpoint around it: right values, nothing recomputed.
    return block(dict(zip(PARAM_NAMES, arrays, strict=True)), x)


_compiled_plain = jax.jit(_plain)


class OwnExerciseWithoutCheckpoint(JaxCheckpoint):
    """`forward` and `nn_checkpoint_forward` (the value methods a JAX port may override; `vjp`
    is refused) run a plain block of the port's own, while the base's model (`apply`) still
    checkpoints: the values are right, and only evidence traced off the port's own
    `nn_checkpoint_forward` can tell."""

    @functools.cached_property
    def _plain_exercise(self) -> CompiledExercise:
        return CompiledExercise(_plain)  # the base's checks and Flax's init, then `_plain`

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool | Policy = True):
        self.policy(checkpoint)  # an undeclared policy still raises, naming `checkpoint`
        arrays = tuple(params.as_dict().values())
        return np.asarray(_compiled_plain(arrays, np.asarray(x, np.float32)))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> jax.Array:
        return self._plain_exercise(seed, x, features)
