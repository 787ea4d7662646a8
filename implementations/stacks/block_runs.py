"""`BlockRuns`: the block's evaluations in one watched call, for an instrument that sees the
block's function called and return (a profile hook) and the matmuls in between; `PhasedWatch`:
what such an instrument counts besides, and the `Record` it makes. Imports the project's record
types only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from ..measuring.record import Evaluation, NotObservable, Record


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


class PhasedWatch:
    """One watched call as a profile-hook instrument (autograd's, TensorFlow's) counts it: the
    phase (backward while `depth`, the backward passes under way, is above 0), the matmuls per
    phase, the regions and the block's evaluations (`blocks`). A subclass sets `instrument`,
    `methods` and `no_backward` (why a call without a backward pass shows none of it), tells a
    block's index by its first kernel (`_block_of(w1)`) and counts the rest itself."""

    instrument: str
    methods: dict[str, str]
    no_backward: str

    def __init__(self) -> None:
        self.depth = 0
        self.matmuls: Counter = Counter()
        self.regions = 0
        self.blocks = BlockRuns()

    @property
    def phase(self) -> str:
        return "backward" if self.depth else "forward"

    def _block_of(self, w1: Any) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define _block_of()")

    def block_event(self, frame: Any, event: str) -> bool:
        """The block's function called (an evaluation opens) or returned (it closes): whether
        one closed."""
        if event == "call":
            self.blocks.enter(self._block_of(frame.f_locals.get("w1")))
        elif event == "return":
            return self.blocks.leave(self.phase)
        return False

    def counted(self, ran: bool, saved: Callable[[], Any], recomputed: dict, reruns: int) -> Record:
        """What the call showed (`Record`); what only a backward pass shows (the saved tensors,
        `saved()`, the backward matmuls, `recomputed`, `reruns`) only where one `ran`."""
        none = NotObservable(self.no_backward)
        return Record(
            self.instrument,
            self.methods,
            saved=saved() if ran else none,
            evaluations=tuple(self.blocks.evaluations),
            forward_matmuls=self.matmuls["forward"],
            backward_matmuls=self.matmuls["backward"] if ran else none,
            recomputed=recomputed if ran else none,
            regions=self.regions,
            reruns=reruns if ran else none,
        )
