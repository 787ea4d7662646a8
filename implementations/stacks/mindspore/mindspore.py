"""The MindSpore port: `Cell.recompute()` on a two-layer MLP cell, PyNative mode, CPU.

The model is the MindSpore stack's `MLP`: `Affine(D, F)` -> `ReLU` ->
`Affine(F, F)`, with `recompute()` called on it. Its parameters are Flax's
canonical ones, computed without JAX by the numpy init, in the canonical
`(in, out)` layout. Gradients come from `mindspore.vjp(model, x,
weights=params)`. Imports mindspore, numpy and the project's numpy-only
modules, never jax.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from implementations.contract import BackwardRecord, Grads, Params
from implementations.policies import whole_block
from implementations.stacks.base import observes
from implementations.stacks.mindspore import (
    MLP,
    STACK,
    CellPool,
    as_input,
    exercise_model,
    from_host_array,
    ms,  # mindspore, imported by the stack after its load-order guard
    parameters,
    state_to_params,
    to_host_array,
)
from implementations.stacks.mindspore import stateful as block_with_state
from implementations.stacks.mindspore.instrument import backward_of
from implementations.stacks.mindspore.mlp import composed
from implementations.stacks.pooled_port import PooledHookPort
from implementations.stacks.switch import checkpoint_on
from implementations.stateful_port import OffersStatefulBlock


class MindSpore(OffersStatefulBlock, PooledHookPort):
    """The MindSpore port: `Cell.recompute()` on the MLP, PyNative, CPU."""

    name = "mindspore"
    framework = "mindspore"
    stack = STACK
    checkpoint_api = "mindspore.nn.Cell.recompute()"
    policies, inexpressible = whole_block(
        "Cell.recompute",
        "the plain cell",
        "Cell.recompute() on the MLP cell",
        keeps="the whole cell is recomputed",
        save_named="no names: Cell.recompute only chooses which cells are recomputed",
        offload_dots="Cell.recompute has no offload option",
    )
    #: The model class the port builds (mutants swap it).
    mlp: type[MLP] = MLP
    to_params = staticmethod(state_to_params)
    #: Cells lent to the contract's calls (keyed by class too, so a mutant gets its own).
    cells: ClassVar[CellPool] = CellPool()

    #: The block with variables and RNGs (property (l); `stateful`): both of MindSpore's
    #: recompute spellings, and the fix beside them.
    state_variants: ClassVar[dict[str, str]] = {
        "default": "Cell.recompute() on the block (ops.Dropout, the statistics assigned in it)",
        "function": "mindspore.recompute(block, x)",
        "stats_outside": "Cell.recompute() on the block, the batch statistics applied once "
        "after the step",
    }
    #: The stack's step of the block (`OffersStatefulBlock.state_step` runs it).
    block_step = staticmethod(block_with_state.state_step)

    compositions: ClassVar[dict[str, str]] = {
        "once": "Cell.recompute() on the MLP cell",
        "twice": "an outer cell marked recompute() around the recomputed MLP cell",
        "under_trainer": "mindspore.recompute(model, x) around the recomputed MLP cell",
    }

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        with self.lent(params, checkpoint) as (_, run):
            return to_host_array(run(as_input(x)))

    @contextlib.contextmanager
    def lent(self, params: Params, checkpoint: Any) -> Iterator[tuple[MLP, Any]]:
        """A pooled cell for one call, and the call that runs it composed as `checkpoint=`
        asks (a composition case this port does not declare is refused by name)."""
        nesting = self.composed_as(checkpoint)
        with self.cells.lend(self.mlp, params, checkpoint=checkpoint_on(checkpoint)) as model:
            yield model, composed(model, nesting)

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        with self.lent(params, checkpoint) as (model, run):
            _, vjp_fn = ms.vjp(run, as_input(x), weights=parameters(model))
            (dx,), grads = vjp_fn(from_host_array(np.asarray(cotangent, np.float32)))
            return Grads(*(to_host_array(g) for g in grads), x=to_host_array(dx))

    # -- evidence: MindSpore's `instrument` on the port's own calls (backward_record: the base's)

    @observes("nn_checkpoint_forward")
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        """The instrument on this port's own `nn_checkpoint_forward(seed, x, features)` through
        `mindspore.vjp` in x, and its backward pass; its parameters are told by their values,
        Flax's for `seed`."""
        x = as_input(x)
        return self.stack.record(
            lambda: backward_of(lambda x: self.nn_checkpoint_forward(seed, x, features), x),
            x,
            self.canonical_values(seed, x, features),
        )

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> ms.Tensor:
        """The exercise: Flax's canonical MLP for `PRNGKey(seed)`, applied to x through a
        recomputed cell.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
        - `x`: a finite real vector of shape `(D,)`: a `mindspore.Tensor`, a numpy
          array or a list. It is never modified; `mindspore.grad` and
          `mindspore.vjp` differentiate through it.
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 output, a `mindspore.Tensor`.
        """
        x, model = exercise_model(seed, x, features, mlp=self.mlp)
        return model(x)  # (D,) -> (F,)


nn_checkpoint_forward = MindSpore.exported()
