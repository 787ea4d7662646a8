"""The true optimum: the fewest block evaluations that reverse a chain of L identical blocks
within a peak, over every persistent schedule (nested regions). Imports numpy only.

Revolve (`implementations.revolve`) is optimal when one block is taped at a time; a
placement may tape several at once (nested's innermost level, a segment's plain tail), and
then Revolve's frontier is not the limit. This is the dynamic program of the rotor / H-Revolve
model (Beaumont, Herrmann and Shilova, "Optimal checkpointing for heterogeneous chains",
2019), for identical blocks, over the placements `implementations.schedules` spells: block
indices (run plain: taped) and `Region`s (checkpointed: rerun when the backward reaches them).

**The cost model** (units: one B x F float32 tensor):

- a region kept keeps its input: 1 unit (a checkpoint);
- a taped block keeps its input and its internals: 1 + a units (`a`: the stack's internals,
  1 for torch and TensorFlow, 1.25 for JAX with relu's mask). Said the other way, its
  internals and its output, the last output of a taped run excepted: that is the next item's
  input (a checkpoint, counted there) or the chain's output (not counted);
- a block evaluation costs 1, in the forward pass and in every rerun (its last block too).

**The peak** of a sequence of items, run forward then backed through last item first, is the
most of `kept(items before i) + inner(item i)` over its items i, where `kept` is 1 for a region
and 1 + a for a taped block, and `inner` is 1 + a for a taped block and, for a region, the peak
of its own items rerun from its input (that input is the first item's: counted once). The
cotangent, the block being run's working values and the parameters are not counted, as in
`implementations.schedules`' model, whose `none`, `every`, `segments`, `nested` and `binomial`
peaks this meets at a = 1. At L = 64, a = 1: 16 units for 127 evaluations
(`[0..7] [8..14] [15..21] ... [62] 63`: 15 checkpoints-and-a-taped-block at most at once), 8
units for 198.

**The program**, in quarter units of memory (a must be a multiple of 1/4):
`E(0, m) = 0`; `E(n, m) = min(1 + E(n-1, m-1-a)` (the first block taped, if m >= 1 + a),
`min over 0 < k < n of k + E(k, m) + E(n-k, m-1))` (a region over the first k blocks: its
forward k, its rerun with all of m, the rest beside its checkpoint). With the first block taped
only when it is the last one (`one_tape=True`) it is Griewank's recursion, and its frontier is
`revolve_frontier`'s at peak c + 1 + a.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from .regions import Item, Region, walk
from .revolve import check_depth

QUARTERS = 4  # memory is counted in quarter units: a = 1.25 is 5 of them
_INF = np.iinfo(np.int64).max // 4


@dataclass(frozen=True)
class OptimalPoint:
    """A point of the optimal frontier: its `peak` (units), its block `evaluations`."""

    peak: float
    evaluations: int


def check_internals(a: Any) -> float:
    """`a` as a float, a non-negative multiple of 1/4; `ValueError`/`TypeError` naming `a`."""
    if isinstance(a, bool) or not isinstance(a, numbers.Real):
        raise TypeError(f"a (the internals in units) must be a number, got {a!r}")
    quarters = float(a) * QUARTERS
    if not quarters >= 0 or quarters != round(quarters):
        raise ValueError(f"a (the internals in units) must be a multiple of 0.25 >= 0, got {a!r}")
    return float(a)


def least_peak(L: int, a: float = 1.0) -> float:
    """The least peak any schedule reaches: one checkpoint and one taped block (2 + a), or
    the block alone at L = 1 (1 + a)."""
    L, a = check_depth(L), check_internals(a)
    return 1 + a + (1 if L > 1 else 0)


def optimal_frontier(L: int, a: float = 1.0, one_tape: bool = False) -> tuple[OptimalPoint, ...]:
    """Every Pareto point (peak, evaluations), the least peak first. With `one_tape`, the
    optimum over schedules that tape one block at a time (Revolve's)."""
    evaluations = _table(check_depth(L), _quarters(a), one_tape)[0][L]
    points, best = [], _INF
    for m, count in enumerate(evaluations):
        if count < best:
            points.append(OptimalPoint(m / QUARTERS, int(count)))
            best = count
    return tuple(points)


def optimal_evaluations(L: int, peak: float, a: float = 1.0, one_tape: bool = False) -> int:
    """The fewest block evaluations within `peak` units; `ValueError` below `least_peak`."""
    L, budget = check_depth(L), _budget(L, peak, a)
    return int(_table(L, _quarters(a), one_tape)[0][L][budget])


def optimal_placement(
    L: int, peak: float, a: float = 1.0, one_tape: bool = False
) -> tuple[Item, ...]:
    """The placement (block indices taped, `Region`s) that attains `optimal_evaluations`
    within `peak` units. Built without recursion: at the least peak it nests L - 1 deep."""
    L, budget = check_depth(L), _budget(L, peak, a)
    quarters = _quarters(a)
    evaluations, choices = _table(L, quarters, one_tape)
    budget = int(np.argmax(evaluations[L] == evaluations[L][budget]))  # its own least peak
    frames = [[L, budget, 0, []]]  # each: blocks left, budget, next block, items
    while True:
        left, room, first, items = frames[-1]
        if left == 0:
            frames.pop()
            if not frames:
                return tuple(items)
            frames[-1][3].append(Region(tuple(items)))
            continue
        k = int(choices[left][room])
        if k == 0:  # the first block taped: it keeps 1 + a while the rest runs
            items.append(first)
            frames[-1][:3] = [left - 1, room - QUARTERS - quarters, first + 1]
        else:  # a region over the next k blocks: its checkpoint kept beside the rest
            frames[-1][:3] = [left - k, room - QUARTERS, first + k]
            frames.append([k, room, first, []])


def placement_cost(items: tuple[Item, ...], a: float = 1.0) -> tuple[float, int]:
    """Any placement's (peak units, block evaluations) under this module's cost model (the
    plan's prediction for a schedule a framework can express)."""
    a = check_internals(a)
    (inputs, internals), evaluations = _walked(items, a)
    return inputs + a * internals, evaluations


def peak_kept(items: tuple[Item, ...], a: float = 1.0) -> tuple[int, int]:
    """(block inputs, blocks' internals) alive at the placement's peak (the first, at a tie)."""
    return _walked(items, check_internals(a))[0]


def _walked(items: tuple[Item, ...], a: float) -> tuple[tuple[int, int], int]:
    """The peak as (inputs, internals) and the block evaluations, walked without recursion
    (at the least peak the placement nests L - 1 deep)."""

    def units(kept: tuple[int, int]) -> float:
        return kept[0] + a * kept[1]

    def beside(before: tuple[int, int], inner: tuple[int, int]) -> tuple[int, int]:
        return before[0] + inner[0], before[1] + inner[1]

    frames = [[(0, 0), (0, 0), 0]]  # per open level: kept so far, its peak so far, its blocks
    evaluations = 0
    for _, item in walk(items):
        if item is None:  # a region closes: its rerun's peak beside what its level kept
            _, inner, blocks = frames.pop()
            evaluations += blocks  # the rerun; each inner region's were counted at its close
            level = frames[-1]
            level[1] = max(level[1], beside(level[0], inner), key=units)
            level[0], level[2] = beside(level[0], (1, 0)), level[2] + blocks
        elif isinstance(item, Region):
            frames.append([(0, 0), (0, 0), 0])
        else:  # a taped block: its input and its internals
            level = frames[-1]
            level[1] = max(level[1], beside(level[0], (1, 1)), key=units)
            level[0], level[2] = beside(level[0], (1, 1)), level[2] + 1
    return frames[0][1], evaluations + frames[0][2]


def _quarters(a: float) -> int:
    return round(check_internals(a) * QUARTERS)


def _budget(L: int, peak: Any, a: float) -> int:
    """`peak` in whole quarter units (rounded down), at least `least_peak`."""
    if isinstance(peak, bool) or not isinstance(peak, numbers.Real) or not peak == peak:
        raise TypeError(f"peak must be a number of units, got {peak!r}")
    least = least_peak(L, a)
    if peak < least:
        raise ValueError(
            f"peak {peak:g} units is below the least any schedule keeps at L={L}: "
            f"{least:g} units (one checkpoint and one taped block)"
        )
    most = L * (1 + check_internals(a))  # every block taped: more memory changes nothing
    return int(np.floor(min(float(peak), most) * QUARTERS))


@functools.lru_cache(maxsize=32)
def _table(L: int, quarters: int, one_tape: bool) -> tuple[np.ndarray, np.ndarray]:
    """E(n, m) for n <= L and m up to L taped blocks, and each one's first item: 0 the first
    block taped, k a region over the first k (the smallest k among equals)."""
    taped = QUARTERS + quarters
    width = L * taped + 1
    evaluations = np.full((L + 1, width), _INF, dtype=np.int64)
    choices = np.zeros((L + 1, width), dtype=np.int64)
    evaluations[0] = 0
    for n in range(1, L + 1):
        best = np.full(width, _INF, dtype=np.int64)
        if n == 1 or not one_tape:
            best[taped:] = 1 + evaluations[n - 1][: width - taped]
        chosen = np.zeros(width, dtype=np.int64)
        for k in range(1, n):
            cost = np.full(width, _INF, dtype=np.int64)
            cost[QUARTERS:] = k + evaluations[k][QUARTERS:] + evaluations[n - k][:-QUARTERS]
            better = cost < best
            best[better], chosen[better] = cost[better], k
        evaluations[n], choices[n] = np.minimum(best, _INF), chosen
    return evaluations, choices
