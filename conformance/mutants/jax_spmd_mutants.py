"""Mutants of the JAX SPMD port (`jax_spmd`), one bug each."""

from __future__ import annotations

import jax

from implementations.jax_spmd import JaxSpmd, block


class SpmdNoCheckpoint(JaxSpmd):
    """The sharded MLP with `jax.checkpoint` removed: the values are right, every device
    keeps its activations for backward and reruns nothing."""

    def run(self, arrays: tuple, x: jax.Array, checkpoint: bool) -> jax.Array:
        return block(arrays, x)
