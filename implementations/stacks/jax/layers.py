"""`TwoLayers`: the plain forward pass of a module MLP with `linear1` and `linear2`. Imports jax.

The Equinox and Flax NNX ports both hold their MLP as two library layers
called `linear1` and `linear2`; each library wraps the same plain pass in
its own checkpoint, so only the plain pass is shared.
"""

from __future__ import annotations

import jax

from .policies import tag


class TwoLayers:
    """A mixin for a library module whose layers `linear1` (D -> F) and `linear2` (F -> F)
    are callables on one `(D,)` vector."""

    def plain(self, x: jax.Array) -> jax.Array:  # (D,) -> (F,)
        x = tag(self.linear1(x))  # (D,) -> (F,), h tagged for save_named
        x = jax.nn.relu(x)
        return self.linear2(x)  # (F,) -> (F,)
