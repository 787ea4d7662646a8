"""The randomness-and-state matrix of `compare`: port x API variant of the stateful block.

For each variant a port offers (`implementations.stateful`): what its stack declares (replay,
stream kept, updates, and each degradation with its upstream reference, the fix and the repro
script where one exists) and what one step measures, at `RATE` on a batch of `BATCH`: the
share of the mask a recompute changed, whether the checkpoint moved the RNG state, and how
many of the canonical's updates the running mean shows. Each part is held to the declaration
by property (l)'s own checks (`checking.properties.l_state`); a part that contradicts it
carries the check's message. Its table is `tables.kinds.compare_state`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from implementations import stateful
from implementations.contract import Implementation

from ..checking.checks import ConformanceError
from ..checking.properties import l_state
from ..checking.strategies import StateCase

#: The step the matrix measures: a batch of 8, half the elements dropped.
BATCH, RATE = 8, 0.5


@dataclass
class StateCell:
    """One port under one API variant of the stateful block (see the module docstring)."""

    variant: str
    spelling: str = ""
    declared_by: str = ""
    measured_by: str = ""
    declared_replay: bool | None = None
    declared_stream: bool | None = None
    declared_updates: int | None = None
    changed: float | None = None  # the largest share of the mask a recompute changed
    recomputes: int | None = None  # the recompute masks the instrument saw
    moved: bool | None = None  # whether the RNG state after the step differs on and off
    updates: int | None = None  # the canonical's updates the running mean shows
    degradations: list[str] | None = None  # "part: what (upstream)"
    fix: str = ""
    repro: str = ""
    unobserved: str = ""  # what the instrument could not see, with its reason
    replay: str = ""  # (l.1)'s message where it contradicts the declaration
    stream: str = ""  # (l.2)'s
    state: str = ""  # (l.3)'s
    error: str = ""

    @property
    def failed(self) -> bool:
        """Whether a part contradicts the declaration, or the step raised."""
        return bool(self.error or self.replay or self.stream or self.state)


def measure(port: Implementation, seed: int, dim: int, features: int) -> list[StateCell]:
    """Every variant of the stateful block `port` offers, measured on one step from `seed`."""
    rng = np.random.default_rng(seed % 2**32)
    case = StateCase(
        seed,
        rng.normal(size=(BATCH, dim)).astype(np.float32),
        features,
        RATE,
        rng.normal(size=(BATCH, features)).astype(np.float32),
    )
    arrays = l_state.arrays_of(case)
    cells = []
    for variant, spelling in stateful.variants(port).items():
        declaration, whose = l_state.declaration_of(port, variant)
        cell = StateCell(variant, spelling, declared_by=whose, measured_by=_measured_by(port))
        try:
            if declaration is None:
                cell.error = f"no declaration written down (looked {whose})"
            else:
                _run(cell, port, declaration, case, arrays)
        except Exception as error:  # a broken port gets a cell that says so, not a crash
            cell.error = f"{type(error).__name__}: {error}"
        cells.append(cell)
    return cells


def _measured_by(port: Any) -> str:
    # The step's masks and RNG state are what the port's state_step reports: the suite's own
    # code where the step is a built-in stack's, the port's word where it is its own.
    method = getattr(port, "state_step", None)
    module = getattr(getattr(method, "__func__", method), "__module__", "") or ""
    return "suite" if module.startswith("implementations.") else "port"


def _run(cell: StateCell, port, declaration, case, arrays) -> None:
    cell.declared_replay, cell.declared_stream = declaration.replay, declaration.stream_kept
    cell.declared_updates, cell.fix, cell.repro = (
        declaration.updates,
        declaration.fix,
        declaration.repro,
    )
    cell.degradations = [f"{d.part}: {d.what} ({d.upstream})" for d in declaration.degradations]
    on = l_state.step_of(port, case, True, cell.variant)
    off = l_state.step_of(port, case, False, cell.variant)
    unseen = [f"{name}: {value}" for name, value in (
        ("mask", on.mask), ("recompute masks", on.recompute_masks), ("RNG state", on.rng_after)
    ) if isinstance(value, stateful.NotObservable)]  # fmt: skip
    cell.unobserved = "; ".join(unseen)
    masks = l_state.seen_masks(on)
    if not isinstance(on.mask, stateful.NotObservable) and not isinstance(
        on.recompute_masks, stateful.NotObservable
    ):
        cell.recomputes = len(masks)
        cell.changed = max((l_state.changed(m, on.mask) for m in masks), default=0.0)
    if not isinstance(on.rng_after, stateful.NotObservable) and not isinstance(
        off.rng_after, stateful.NotObservable
    ):
        cell.moved = on.rng_after != off.rng_after
    cell.updates = l_state.updates_seen(on, declaration, case, arrays)
    for part, check in (
        ("replay", lambda: l_state.check_replay(port, declaration, on, off, case, arrays)),
        ("stream", lambda: l_state.check_stream(port, declaration, on, off)),
        ("state", lambda: l_state.check_state(port, declaration, on, off, case, arrays, None)),
    ):
        try:
            check()
        except ConformanceError as error:
            setattr(cell, part, str(error).split("] ", 1)[-1])


def failed(cell: StateCell) -> bool:
    """Whether a cell is a ✗ (`StateCell.failed`)."""
    return cell.failed
