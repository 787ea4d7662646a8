"""The PaddlePaddle port: `paddle.distributed.fleet.utils.recompute` around a two-layer MLP.

Dygraph (eager) mode on the CPU. The model is the Paddle stack's `MLP`:
`Linear(D, F)` -> `ReLU` -> `Linear(F, F)`, its forward pass under
`recompute(block, x)` (reentrant, Paddle's default). Its parameters are
Flax's canonical ones, computed without JAX by the numpy init; Paddle's
`Linear.weight` is `(in, out)`, the canonical layout. A reentrant recompute
is a `PyLayer` whose backward reruns the block: gradients come from
`.backward()` and `.grad` (as with any Paddle training loop). Imports
paddle, numpy and the project's numpy-only modules, never jax.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from implementations.contract import BackwardRecord, Grads, Params
from implementations.policies import whole_block
from implementations.stacks.base import observes
from implementations.stacks.paddle import (
    MLP,
    STACK,
    LayerPool,
    exercise_model,
    from_host_array,
    grads_of,
    leaf_input,
    state_to_params,
    to_host_array,
)
from implementations.stacks.paddle import stateful as block_with_state
from implementations.stacks.paddle.instrument import backward_of
from implementations.stacks.pooled_port import PooledHookPort
from implementations.stacks.switch import checkpoint_on
from implementations.stateful_port import OffersStatefulBlock

if TYPE_CHECKING:  # imported by the stack, under its warning filter
    import paddle


class Paddle(OffersStatefulBlock, PooledHookPort):
    """The PaddlePaddle port: `recompute(block, x)` around an MLP, dygraph, CPU."""

    name = "paddle"
    framework = "paddlepaddle"
    stack = STACK
    checkpoint_api = "paddle.distributed.fleet.utils.recompute"
    policies, inexpressible = whole_block(
        "recompute",
        "the plain layer",
        "paddle.distributed.fleet.utils.recompute(block, x)",
        keeps="it keeps the block's inputs only",
        save_named="no names: recompute takes no policy, only the block's placement",
        offload_dots="recompute takes no policy; its offload option is for inputs, not dots",
    )
    #: The module class the port builds (mutants swap it).
    mlp: type[MLP] = MLP
    to_params = staticmethod(state_to_params)
    #: Layers lent to the contract's calls (keyed by class too, so a mutant gets its own).
    layers: ClassVar[LayerPool] = LayerPool()

    #: The block with variables and RNGs (property (l); `stateful`): recompute as users call
    #: it, its preserve_rng_state=False, and the fix beside them.
    state_variants: ClassVar[dict[str, str]] = {
        "default": "fleet.utils.recompute(block, x) (preserve_rng_state=True) over Dropout and "
        "BatchNorm1D, after paddle.seed(seed)",
        "no_preserve": "fleet.utils.recompute(block, x, preserve_rng_state=False)",
        "stats_outside": "fleet.utils.recompute(block, x), the batch statistics returned and "
        "the running ones updated outside",
    }
    #: The stack's step of the block (`OffersStatefulBlock.state_step` runs it).
    block_step = staticmethod(block_with_state.state_step)

    compositions: ClassVar[dict[str, str]] = {
        "once": "recompute(block, x)",
        "twice": "recompute(lambda y: recompute(block, y), x)",
        "under_trainer": "recompute(model, x) around a layer whose forward recomputes its block",
    }

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        # x requires grad, as in `vjp`: the recompute runs.
        with self.lent(params, checkpoint) as model:
            return to_host_array(model(leaf_input(x)))

    @contextlib.contextmanager
    def lent(self, params: Params, checkpoint: Any) -> Iterator[MLP]:
        """A pooled layer for one call, its recompute composed as `checkpoint=` asks (a
        composition case this port does not declare is refused by name)."""
        nesting = self.composed_as(checkpoint)
        with self.layers.lend(self.mlp, params, checkpoint=checkpoint_on(checkpoint)) as model:
            model.nesting = nesting
            yield model

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        x = leaf_input(x)
        with self.lent(params, checkpoint) as model:
            model(x).backward(from_host_array(np.asarray(cotangent, np.float32)))
            return grads_of(model, x)

    # -- evidence: Paddle's `instrument.observe` on the port's own calls (backward_record: the
    # base's)

    @observes("nn_checkpoint_forward")
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        """The instrument on this port's own `nn_checkpoint_forward(seed, x, features)`, x a
        leaf that requires grad, and the backward pass of its output; its parameters are told
        by their values, Flax's for `seed`."""
        x = leaf_input(x)
        return self.stack.record(
            lambda: backward_of(self.nn_checkpoint_forward(seed, x, features)),
            x,
            self.canonical_values(seed, x, features),
        )

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> paddle.Tensor:
        """The exercise: Flax's canonical MLP for `PRNGKey(seed)`, applied to x through
        `recompute`.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
        - `x`: a finite real vector of shape `(D,)`: a `paddle.Tensor`, a numpy
          array or a list. It is never modified, and gradients flow back to it
          when it requires grad (`stop_gradient=False`).
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 output, a `paddle.Tensor`.
        """
        x, model = exercise_model(seed, x, features, mlp=self.mlp)
        return model(x)  # (D,) -> (F,)


nn_checkpoint_forward = Paddle.exported()
