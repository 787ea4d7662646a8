"""Revolve: the fewest forward steps that reverse L steps with c snapshots. Imports numpy only.

Griewank's model (Griewank & Walther 2000, "Algorithm 799: revolve", ACM TOMS 26(1)): a chain
of L steps is reversed from its start state with c snapshots of states (the start's included).
Each step's adjoint runs that step's forward once more, *taped*; the count here is of the other
forward steps, the *advances* (the first sweep's included): ADOL-C's `numforw` in revolve.c.

Two independent ways to the same number:

- `revolve_forward_steps(L, c)`: the closed form `r*L - C(c+r, c+1)`, with `r` the least
  integer such that `C(c+r, c) >= L` (ADOL-C's `numforw`, line for line);
- `optimal_forward_steps(L, c)`: Griewank's recursion, solved by dynamic programming:
  `t(l, c) = min over 0 < k < l of k + t(l-k, c-1) + t(k, c)`, `t(1, c) = 0` (the last step
  is taped straight from the state in hand), `t(l, 0) = inf` for `l >= 2`. Advancing k steps
  from a snapshot leaves c-1 snapshots for the l-k steps after, then the k before are
  reversed with all c. `optimal_split(l, c)` is the k it picks (the smallest minimiser).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

#: Unreachable: l >= 2 steps with no snapshot cannot be reversed.
_INF = np.iinfo(np.int64).max // 4


def check_depth(value: Any, name: str = "L") -> int:
    """`value` as a positive int; `TypeError`/`ValueError` naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def revolve_forward_steps(L: int, c: int) -> int:
    """ADOL-C's `numforw(L, c)`: `r*L - C(c+r, c+1)`, r the least with `C(c+r, c) >= L`."""
    L, c = check_depth(L), check_depth(c, "c")
    reps, reach = 0, 1  # reach = C(c + reps, c): the steps reps sweeps can reverse
    while reach < L:
        reps += 1
        reach = reach * (reps + c) // reps
    return reps * L - reach * reps // (c + 1)  # C(c+r, c) * r / (c+1) = C(c+r, c+1)


class _Table:
    """t(l, c) and its smallest minimising split, one row per c, each grown on demand (row c
    needs row c-1 as long), by doubling: a loop over L extends a row log(L) times."""

    def __init__(self):
        self.steps: list[np.ndarray] = []  # steps[c][l]; l = 0 is unused
        self.splits: list[np.ndarray] = []

    def ensure(self, length: int, snapshots: int) -> None:
        while len(self.steps) <= snapshots:  # t(1, c) = 0: the step is taped from the state
            self.steps.append(np.array([_INF, 0], dtype=np.int64))
            self.splits.append(np.zeros(2, dtype=np.int64))
        have = len(self.steps[snapshots]) - 1
        if have >= length:
            return
        target = max(length, 2 * have)
        for c in range(snapshots + 1):
            if len(self.steps[c]) - 1 < target:
                self._extend(c, target)

    def _extend(self, c: int, length: int) -> None:
        have = len(self.steps[c]) - 1
        steps = np.concatenate([self.steps[c], np.full(length - have, _INF, dtype=np.int64)])
        splits = np.concatenate([self.splits[c], np.zeros(length - have, dtype=np.int64)])
        if c > 0:  # row 0 stays infinite past l = 1: no snapshot, no reversal
            fewer = self.steps[c - 1]
            for n in range(have + 1, length + 1):
                k = np.arange(1, n)
                cost = k + fewer[n - k] + steps[k]
                best = int(np.argmin(cost))  # the first minimum: the smallest split
                steps[n], splits[n] = cost[best], k[best]
        self.steps[c], self.splits[c] = steps, splits


_TABLE = _Table()


def optimal_forward_steps(L: int, c: int) -> int:
    """t(L, c) by Griewank's recursion (dynamic programming, not the closed form)."""
    L, c = check_depth(L), check_depth(c, "c")
    c = min(c, max(L - 1, 1))  # past L - 1 snapshots, more change nothing
    _TABLE.ensure(L, c)
    return int(_TABLE.steps[c][L])


def optimal_split(L: int, c: int) -> int:
    """The steps the recursion advances before its first snapshot is left behind: the k of
    t(L, c)'s minimum (the smallest one); 0 for L = 1 (nothing to split)."""
    L, c = check_depth(L), check_depth(c, "c")
    c = min(c, max(L - 1, 1))
    _TABLE.ensure(L, c)
    return int(_TABLE.splits[c][L])
