"""Mutants of the JAX SPMD port (`jax_spmd`), one bug each.

The port's module is imported before anything else imports jax (it sets
`XLA_FLAGS` for its devices first), so this module imports jax only through it.
"""

from __future__ import annotations

from typing import Any

from implementations.stacks.jax.jax_spmd import JaxSpmd, block


class SpmdNoCheckpoint(JaxSpmd):
    """The sharded MLP with `jax.checkpoint` removed: the values are right, every device
    keeps its activations for backward and reruns nothing."""

    def run(self, arrays: tuple, x: Any, checkpoint: bool) -> Any:
        return block(arrays, x)
