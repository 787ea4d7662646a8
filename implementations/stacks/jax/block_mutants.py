"""A deliberately broken JAX bench block: every schedule the compiler removes, reported as measured.

`UNROLLED` is JAX's block with one change: `place` unrolls every region (a `jax.checkpoint` of
its items called in turn, no `lax.scan`), so no rerun is a loop of its own. On XLA:CPU
the checkpoint's optimization barriers are expanded before HloCSE, which merges each rerun
into the forward pass: the compiled program runs no schedule. The bench must flag its rows
(forward matmuls off the model), not read them as the schedules measured
(tests/jax/test_jax_schedules.py runs it through the driver).
"""

from __future__ import annotations

import types
from collections.abc import Callable

import jax

from implementations.measuring.driver import StackBench
from implementations.measuring.placement import Placement
from implementations.schedules import Item, Region

from . import block, instrument


def _unrolled(items: tuple[Item, ...]) -> Callable:
    """`run(stacked, x)`: each block on its own slice of the stacked parameters, each region
    a `jax.checkpoint` of its items, none in a loop."""
    parts = [
        jax.checkpoint(_unrolled(item.items))
        if isinstance(item, Region)
        else (lambda stacked, x, i=item: block.block(tuple(p[i] for p in stacked), x))
        for item in items
    ]

    def run(stacked, x):
        for part in parts:
            x = part(stacked, x)
        return x

    return run


def unrolled_place(placement: Placement) -> Callable:
    """The mutant's `place`: the placement unrolled (its policies ignored: a mutant's)."""
    run = _unrolled(placement.items)
    run.placement = placement
    return run


def _module() -> types.ModuleType:
    mutant = types.ModuleType(f"{__name__}.unrolled")
    own = {k: v for k, v in vars(block).items() if not k.startswith("__")}
    own.pop("canonical_values")  # its values are held to the real canonical, never its own
    mutant.__dict__.update(own)
    mutant.place = unrolled_place
    return mutant


#: The mutant's bench module, through the generic driver with JAX's own instrument.
UNROLLED = StackBench(_module(), instrument)
