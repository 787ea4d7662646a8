"""The Keras 3 port on the torch backend: the MLP made inside `keras.RematScope(mode="full")`.

On torch, Keras's remat is `torch.utils.checkpoint.checkpoint(call, *args,
use_reentrant=False, **kwargs)` around the MLP's `call`. The model
(`implementations.stacks.keras.model`, shared by the three Keras ports) holds its weights as
torch parameters, kernels `(in, out)` as the canonical layout. It runs
stateful: a `stateless_call` would be wrong here, because torch reruns the
region during the backward pass, after Keras has left the stateless scope,
so the rerun reads the model's own weights, not the ones passed in
(tests/keras/test_keras.py shows the wrong gradients).

Evidence comes from torch's own instrument on the port's own call (the torch
stack's `instrument`: one dispatch mode and saved-tensor hooks around `vjp`, or
around `nn_checkpoint_forward` and a backward pass of its output), so a
subclass's override of either is what (e) sees. Keras hands `call`'s keyword
arguments to `torch.utils.checkpoint`, which keeps `context_fn` for itself:
that is how the watch counts Keras's checkpoint regions.

Loading it imports Keras on the torch backend, or raises
`contract.StackUnavailable` if Keras runs on another backend in this process.
Imports torch, keras, numpy and the project's numpy-only modules.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np
import torch

from implementations.contract import BackwardRecord, Params, check_exercise
from implementations.stacks import keras as keras_stack
from implementations.stacks.base import observes
from implementations.stacks.numpy import canonical_params
from implementations.stacks.torch import (
    TorchPort,
    as_input,
    from_host_array,
    instrument,
    leaf_input,
)

STACK = keras_stack.on("torch")  # before anything imports keras: it reads its backend once

from implementations.stacks.keras import model, torch_stateful  # noqa: E402 - keras, on torch
from implementations.stacks.keras.port import StatefulKerasPort  # noqa: E402
from implementations.stacks.keras.torch_declarations import KERAS_TORCH  # noqa: E402
from implementations.stacks.torch.stateful import StatefulTorch, Variant  # noqa: E402
from implementations.stateful import DEFAULT_VARIANT  # noqa: E402


class MLP(model.MLP):
    """The shared MLP, its `call` taking a `context_fn` for torch's checkpoint.

    Inside a region Keras passes `context_fn=...` on to
    `torch.utils.checkpoint.checkpoint`, which takes it as its own argument
    (and never hands it to `call`); without a region `call` gets it and
    ignores it.
    """

    def call(self, x: Any, context_fn: Any = None) -> Any:  # (D,) -> (F,)
        return super().call(x)


class Nested(model.Nested):
    """The shared composition, its inner region handed torch's `context_fn` as `run` does
    (torch's checkpoint takes the outer region's, never passing it on)."""

    def inner_call(self, x: Any) -> Any:
        return run(self.inner, x)


@functools.lru_cache(maxsize=16)
def _exercise_model(seed: int, dim: int, features: int, mode: str | None = model.FULL) -> MLP:
    # One model per (seed, D, F), never changed, so an output's graph (whose
    # checkpoint reruns the block from the model's weights) stays right
    # however many calls come in between. Frozen: as in Flax's exercise,
    # only x can be differentiated, and nothing accumulates a .grad here.
    mlp = model.build(canonical_params(seed, dim, features), mode=mode, cls=MLP)
    for variable in mlp.trainable_variables:
        variable.value.requires_grad_(False)
    return mlp


def exercise(seed: Any, x: Any, features: Any, mode: str | None = model.FULL) -> Any:
    """`nn_checkpoint_forward` with the model made under `RematScope(mode=mode)`."""
    if model.is_symbolic(x):
        return model.symbolic_exercise(seed, x, features, canonical_params)
    seed, x, features = check_exercise(seed, model.unwrap(x), features, as_input)
    return run(_exercise_model(seed, x.shape[0], features, mode), x)


def run(mlp: MLP, x: Any) -> Any:
    """`mlp(x)`; under torch's instrument (`instrument.active()`), with its `context_fn`, which
    Keras hands to torch's checkpoint, so that the record counts the regions."""
    watch = instrument.active()
    return mlp(x) if watch is None else mlp(x, context_fn=watch.context_fn(None))


class KerasTorch(StatefulTorch, StatefulKerasPort):
    """Keras 3 on torch: `keras.RematScope(mode="full")`, that is non-reentrant
    `torch.utils.checkpoint`."""

    name = "keras_torch"
    stack = STACK
    state_runs: ClassVar[dict[str, Variant]] = {
        DEFAULT_VARIANT: Variant(
            KERAS_TORCH[DEFAULT_VARIANT].spelling, step=torch_stateful.state_step
        )
    }

    def reused(self, params: Params, checkpoint: bool, **kwargs: Any) -> model.MLP:
        # The MLP whose call takes `context_fn` (for torch's checkpoint): see `run`.
        return super().reused(params, checkpoint, **({"cls": MLP, "nested": Nested} | kwargs))

    def model_input(self, x: np.ndarray) -> torch.Tensor:
        return as_input(x)  # grad stays on: the checkpoint runs

    def gradients(self, mlp: model.MLP, x: np.ndarray, weights: list, cotangent: np.ndarray):
        x = leaf_input(x)
        out = run(mlp, x)
        dx, *grads = torch.autograd.grad(out, [x, *weights], from_host_array(cotangent))
        return dx, grads

    # -- evidence: torch's instrument on the port's own calls (`instrument`) ---------------

    @observes("vjp")
    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        """The instrument on this port's own `vjp(params, x, ones, checkpoint=checkpoint)`."""
        return instrument.observe(self.own_vjp(params, x, checkpoint), x)

    #: The instrument on this port's own `nn_checkpoint_forward`, as on every torch port's.
    exercise_record = TorchPort.exercise_record

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> Any:
        """The exercise: Flax's canonical MLP for `PRNGKey(seed)` in Keras on torch, checkpointed.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d
          array or tensor).
        - `x`: a finite real vector of shape `(D,)`: a torch tensor (gradients
          flow back to it when it requires grad), a `keras.Variable`, numpy or a
          list; or a symbolic `keras.KerasTensor` of shape `(D,)`, which gives
          the symbolic `(F,)` output. x is never modified.
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 tensor, on Keras's device.
        """
        return exercise(seed, x, features, self.mode)


nn_checkpoint_forward = KerasTorch.exported()
