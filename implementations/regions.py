"""A placement's vocabulary: `Region`s of consecutive blocks, nested, and the block indices
run plain between them (`Item`), walked, shown and listed. Imports nothing but the standard
library: the schedules (`implementations.schedules`) and the optimum (`implementations.optimum`)
both build on it.
"""

from __future__ import annotations

import functools
import itertools
import numbers
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, eq=False, repr=False)
class Region:
    """A checkpoint region over consecutive blocks: its `items`, each a block index (run
    plain) or a `Region` (nested). Equal when they place the same (`show`)."""

    items: tuple[Item, ...]

    def __post_init__(self):
        if not isinstance(self.items, tuple) or not self.items:
            raise ValueError(
                f"a region needs a tuple of one item or more, got items={self.items!r}"
            )
        spans = []
        for item in self.items:  # each nested region checked its own when it was made
            if isinstance(item, Region):
                spans.append(item.blocks)
            elif isinstance(item, numbers.Integral) and not isinstance(item, bool) and item >= 0:
                spans.append(range(int(item), int(item) + 1))
            else:
                raise TypeError(f"a region's items are block indices or regions, got {item!r}")
        for before, after in itertools.pairwise(spans):
            if after.start != before.stop:
                raise ValueError(
                    f"a region's items must be consecutive blocks, got {show(self.items)}"
                )
        # not a field: kept so that nothing about a region walks its tree twice
        object.__setattr__(self, "_blocks", range(spans[0].start, spans[-1].stop))

    @property
    def blocks(self) -> range:
        """The blocks it covers."""
        return self._blocks

    @functools.cached_property
    def _shown(self) -> str:
        return show(self.items, region=True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Region):
            return NotImplemented
        return self.blocks == other.blocks and self._shown == other._shown

    def __hash__(self) -> int:
        return hash(self._shown)

    def __str__(self) -> str:
        return self._shown

    def __repr__(self) -> str:
        return f"Region({self._shown!r})"


#: One item of a placement: a block index (run plain) or a region.
Item = int | Region


def walk(placement: tuple[Item, ...]) -> Iterator[tuple[int, Item | None]]:
    """The placement in order, without recursion (Revolve nests regions L deep): (depth, item)
    as each item is met, and (depth, None) as each region closes."""
    stack = [iter(placement)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            if stack:
                yield len(stack), None
            continue
        yield len(stack), item
        if isinstance(item, Region):
            stack.append(iter(item.items))


def show(placement: tuple[Item, ...], region: bool = False, separator: str = " ") -> str:
    """A placement in one line: regions in brackets, `[[0] 1] [2] 3` (with `separator=", "`
    and `region=True`, as nested Python lists: `[[[0], 1], [2], 3]`)."""
    text, fresh = [], True
    for _, item in walk(placement):
        if item is None:
            text.append("]")
            fresh = False
            continue
        text.append(("" if fresh else separator) + ("[" if isinstance(item, Region) else str(item)))
        fresh = isinstance(item, Region)
    return f"[{''.join(text)}]" if region else "".join(text)


def regions(placement: tuple[Item, ...]) -> Iterator[tuple[int, Region]]:
    """Every region of `placement` with its nesting depth (1: outermost), outer ones first."""
    for depth, item in walk(placement):
        if isinstance(item, Region):
            yield depth, item
