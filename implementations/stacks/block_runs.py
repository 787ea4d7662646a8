"""`BlockRuns`: the block's evaluations in one watched call, for an instrument that sees the
block's function called and return (a profile hook) and the matmuls in between. Imports the
project's record types only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..measuring.record import Evaluation


class BlockRuns:
    """The evaluations so far (`evaluations`): one opens when the block's function is called
    (`enter`, with what will tell its index), gathers the matmuls it runs (`open[-1]`'s list)
    and closes when the function returns (`leave`); a rerun inside a rerun closes first."""

    def __init__(self) -> None:
        self.open: list[tuple[Any, list[str]]] = []  # evaluations under way, matmuls run
        self.evaluations: list[Evaluation] = []

    def enter(self, key: Any) -> None:
        self.open.append((key, []))

    def leave(self, phase: str, index: Callable[[Any], int] | None = None) -> bool:
        """Close the innermost open evaluation as one of `phase`, its block `index(key)` (the
        key itself without `index`); False where none is open (the watch began inside it)."""
        if not self.open:
            return False
        key, ran = self.open.pop()
        block = key if index is None else index(key)
        self.evaluations.append(Evaluation(block, phase, tuple(ran)))
        return True
