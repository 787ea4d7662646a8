"""A mutant that stands for a port from another package: its module patches the canonical's
framework on import (declared in `manifest`, `outside=True`).

`flax.linen.relu` becomes a leaky relu in every process that imports this module. Loaded as
a port from another package is (`conformance.mutants.load`: `implementations.OUTSIDE_LOADED`),
its worker makes the canonical side in a clean process: the mutant computes with the relu it
patched, and (b) sees it. Where the canonical side was made beside it (cb1e6a1), it agreed
with the canonical it had patched, and survived.
"""

from __future__ import annotations

import flax.linen
import jax.numpy as jnp

from implementations.stacks.jax.flax_linen import FlaxLinen


def leaky_relu(x):
    return jnp.where(x > 0, x, 0.01 * x)


flax.linen.relu = leaky_relu  # on import: what an outside package can do to the process


class PatchesFlaxOnImport(FlaxLinen):
    """The canonical port, computing with the relu its module patched."""
