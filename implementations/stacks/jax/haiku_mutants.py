"""Mutants of the Haiku port: `hk.remat` left out."""

from __future__ import annotations

from implementations.stacks.jax.haiku import Haiku


class HaikuNoRemat(Haiku):
    """`hk.remat` dropped: the same MLP and values, nothing rematerialized."""

    def apply(self, params, x, checkpoint):
        return super().apply(params, x, False)
