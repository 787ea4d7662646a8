"""`stacked(items, block, region)`: a placement's blocks and regions as one function of x and
the parameters, for a stack whose region takes `(x, *params)` and returns the region's output
(Paddle's reentrant `recompute`, DeepSpeed's checkpoint). Imports nothing of a framework.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..regions import Item, Region

#: Parameters per block: w1, b1, w2, b2.
PER_BLOCK = 4


def stacked(
    items: tuple[Item, ...], block: Callable[..., Any], region: Callable[[Callable], Callable]
) -> Callable[..., Any]:
    """`run(x, *params)` over `items` (`Placement.items`; 4 parameters a block, in order): a
    block index runs `block(x, w1, b1, w2, b2)`, a region runs `region(inner)(x, *params)`,
    `inner` being its own items stacked the same way (nested as the placement nests)."""
    parts = [
        (region(stacked(item.items, block, region)), len(item.blocks))
        if isinstance(item, Region)
        else (block, 1)
        for item in items
    ]

    def run(x: Any, *params: Any) -> Any:
        start = 0
        for function, count in parts:
            x = function(x, *params[start : start + PER_BLOCK * count])
            start += PER_BLOCK * count
        return x

    return run
