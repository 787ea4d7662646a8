"""A schedule's placement as Flax linen builds it: the canonical every schedule's values are held
to (`block.canonical_values`). Imports flax.

- `none`, `every`, `nested(l1,...)`: one `nn.remat_scan` with lengths `(L,)`, `(L, 1)`,
  `(l1,...)` (flax/core/lift.py: a scan per level, every level but the innermost remat'd).
- `segments(s)`: `nn.remat_scan(lengths=(s-1, L//s))`, the s-1 regions, then
  `nn.remat_scan(lengths=(tail,))`, the plain tail (a scan, no remat).
- `binomial(c)`: Revolve's regions, each an `nn.checkpoint` of its items, unrolled (no Flax
  loop holds regions of different sizes), with `prevent_cse=False` as remat_scan's own
  regions have it (it halves the compile of L = 64's, which the values alone need).

`module(schedule, L, F)` gives `(module, layout)`; the layout puts the blocks' parameters
where the module's variables keep them and reads the gradients back, block by block.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from implementations.schedules import Region, Schedule

KINDS = (("Dense_0", "kernel"), ("Dense_0", "bias"), ("Dense_1", "kernel"), ("Dense_1", "bias"))


class FlaxBlock(nn.Module):
    """The exercise's block, `Dense(F) -> relu -> Dense(F)`, as Flax linen writes it."""

    features: int

    @nn.compact
    def __call__(self, x):  # (B, F) -> (B, F)
        h = nn.Dense(self.features)(x)  # Dense_0: named first, so made first
        return nn.Dense(self.features)(nn.relu(h))


class Scans(nn.Module):
    """`nn.remat_scan(FlaxBlock, lengths)` for each `(name, lengths)` of `parts`, in order."""

    parts: tuple[tuple[str, tuple[int, ...]], ...]
    features: int

    @nn.compact
    def __call__(self, x):
        for name, lengths in self.parts:
            x = nn.remat_scan(FlaxBlock, lengths=lengths)(self.features, name=name)(x)
        return x


class Placed(nn.Module):
    """The items in order: a block index a `FlaxBlock`, a `Region` an `nn.checkpoint` of its."""

    items: tuple
    features: int

    @nn.compact
    def __call__(self, x):
        for item in self.items:
            if isinstance(item, Region):
                region = nn.checkpoint(Placed, prevent_cse=False)(
                    item.items, self.features, name=_name(item)
                )
                x = region(x)
            else:
                x = FlaxBlock(self.features, name=f"block_{item}")(x)
        return x


def _name(region: Region) -> str:
    return f"region_{region.blocks.start}_{region.blocks.stop - 1}"


class ScanLayout:
    """Blocks 0..L-1 kept by `Scans`: each part's variables stacked `lengths` deep, block
    index `i1*l2*...*ld + ... + id` within the part (remat_scan's order)."""

    def __init__(self, parts: tuple[tuple[str, tuple[int, ...]], ...]):
        self.parts = parts

    def variables(self, blocks: Sequence[tuple]) -> dict:
        found, start = {}, 0
        for name, lengths in self.parts:
            mine = blocks[start : start + math.prod(lengths)]
            found[name] = {"Dense_0": {}, "Dense_1": {}}
            for i, (layer, kind) in enumerate(KINDS):
                stacked = jnp.stack([b[i] for b in mine])
                found[name][layer][kind] = stacked.reshape(lengths + stacked.shape[1:])
            start += math.prod(lengths)
        return found

    def gradients(self, grads: dict, L: int) -> list[tuple[np.ndarray, ...]]:
        per_kind = [[] for _ in KINDS]
        for name, lengths in self.parts:
            for i, (layer, kind) in enumerate(KINDS):
                g = np.asarray(grads[name][layer][kind])
                per_kind[i].extend(g.reshape((math.prod(lengths), *g.shape[len(lengths) :])))
        return [tuple(k[b] for k in per_kind) for b in range(L)]


class TreeLayout:
    """Blocks kept by `Placed`: each under its regions' names, then `block_<i>`."""

    def __init__(self, items: tuple):
        self.paths = {}  # block -> the names down to it
        self._walk(items, ())

    def _walk(self, items: tuple, path: tuple[str, ...]) -> None:
        for item in items:
            if isinstance(item, Region):
                self._walk(item.items, (*path, _name(item)))
            else:
                self.paths[item] = (*path, f"block_{item}")

    def variables(self, blocks: Sequence[tuple]) -> dict:
        found: dict = {}
        for index, path in self.paths.items():
            node = found
            for name in path:
                node = node.setdefault(name, {})
            for i, (layer, kind) in enumerate(KINDS):
                node.setdefault(layer, {})[kind] = jnp.asarray(blocks[index][i])
        return found

    def gradients(self, grads: dict, L: int) -> list[tuple[np.ndarray, ...]]:
        found = []
        for index in range(L):
            node = grads
            for name in self.paths[index]:
                node = node[name]
            found.append(tuple(np.asarray(node[layer][kind]) for layer, kind in KINDS))
        return found


def module(schedule: Schedule, L: int, features: int) -> tuple[nn.Module, Any]:
    """`(module, layout)`: the schedule's placement at depth L as Flax linen builds it."""
    schedule.placement(L)  # checks L against the schedule (nested lengths, segments' s, budget)
    if schedule.name == "binomial":
        items = schedule.placement(L)
        return Placed(items, features), TreeLayout(items)
    if schedule.name == "segments":
        s = schedule.args[0]
        size = L // s
        parts = (("regions", (s - 1, size)), ("tail", (L - size * (s - 1),)))
    else:
        lengths = {"none": (L,), "every": (L, 1)}.get(schedule.name, schedule.args)
        parts = (("stack", tuple(lengths)),)
    return Scans(parts, features), ScanLayout(parts)
