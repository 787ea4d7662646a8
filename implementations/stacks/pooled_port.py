"""`PooledHookPort`: what the ports whose calls lend a pooled model and read their evidence
with a stack's hook instrument share (MindSpore, Paddle). Imports the project's own modules
only: the stack (its `record`, its pool) comes from the subclass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from implementations.contract import BackwardRecord, Params
from implementations.stacks import Port
from implementations.stacks.base import observes


class PooledHookPort(Port, abstract=True):
    """A subclass sets `stack` (with `record(call, x, parameters)`: its instrument around a
    call), `mlp` (its model class, which mutants swap) and `to_params` (the stack's export of
    a model's parameters), and defines `vjp`, which lends a pooled model for the call."""

    mlp: type
    to_params: Callable[[Any], Params]

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The numpy canonical init, loaded into the stack's model and exported again, so
        # that the conversions are part of what is checked.
        return self.to_params(self.mlp(self.stack.canonical_params(seed, dim, features)))

    def canonical_values(self, seed: Any, x: Any, features: Any) -> Callable[[], Iterable]:
        """What tells the exercise's parameters apart in its record: Flax's arrays for `seed`
        at x's width, made when the record asks."""
        return lambda: self.stack.canonical_params(seed, x.shape[0], features).as_dict().values()

    def composed_as(self, checkpoint: Any) -> str:
        """The nesting `checkpoint=` asks for; a composition case this port does not declare
        is refused, naming it."""
        nesting = self.nesting(checkpoint)
        if nesting != "once":
            self.policy(checkpoint)  # refuses an undeclared case, naming it
        return nesting

    @observes("vjp")
    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        """The instrument on this port's own `vjp(params, x, ones, checkpoint=checkpoint)`:
        whatever a subclass overrides, the evidence is read off the call whose values (c)
        checks."""
        return self.stack.record(
            self.own_vjp(params, x, checkpoint), x, lambda: params.as_dict().values()
        )
