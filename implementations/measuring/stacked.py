"""`stacked(items, block, region)`: a placement's blocks and regions as one function of x and
the parameters, for a stack whose region takes `(x, *params)` and returns the region's output
(Paddle's reentrant `recompute`, torch's checkpoints). Imports nothing of a framework.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..regions import Item, Region

#: Parameters per block: w1, b1, w2, b2.
PER_BLOCK = 4


def stacked(
    items: Sequence[Item],
    block: Callable[..., Any],
    region: Callable[[Region], Callable[[Callable], Callable]],
) -> Callable[..., Any]:
    """`run(x, *params)` over `items` (`Placement.items`; 4 parameters a block, in order): a
    block index runs `block(x, w1, b1, w2, b2)`, a region runs `region(item)(inner)(x,
    *params)`, `inner` being its own items stacked the same way (nested as the placement
    nests). `region(item)` is called before its inner regions' (torch chooses, and so numbers,
    a region's checkpoint there)."""
    parts = []  # (function of (x, *params), how many blocks' params it takes)
    for item in items:
        if isinstance(item, Region):
            wrap = region(item)
            parts.append((wrap(stacked(item.items, block, region)), len(item.blocks)))
        else:
            parts.append((block, 1))

    def run(x: Any, *params: Any) -> Any:
        start = 0
        for function, count in parts:
            x = function(x, *params[start : start + PER_BLOCK * count])
            start += PER_BLOCK * count
        return x

    return run
