"""Mutants of the autograd port: the checkpoint left out, `autograd.checkpoint` as shipped, and
the porter's own model, never checkpointed."""

from __future__ import annotations

from typing import Any, ClassVar

import autograd
import autograd.numpy as anp
import numpy as np
from autograd import make_vjp

from implementations.contract import Grads, Params
from implementations.stacks.autograd import as_input, to_host_array
from implementations.stacks.autograd.block import block, relu
from implementations.stacks.autograd.hips_autograd import (
    HipsAutograd,
    _exercise,
    arrays_to_params,
    params_to_arrays,
)

#: `autograd.checkpoint` (1.9.1) around the same block, made once (its primitive is global).
upstream_checkpointed_block = autograd.checkpoint(block)


class AutogradNoCheckpoint(HipsAutograd):
    """The checkpoint dropped: the full policy runs the plain block (same values, activations
    kept)."""

    checkpointed: ClassVar = staticmethod(block)


class AutogradUpstreamCheckpoint(HipsAutograd):
    """`autograd.checkpoint` as shipped: its VJP maker traces the block in the forward pass
    (once per differentiated input) and keeps those traces' activations; the backward pass
    recomputes nothing."""

    checkpointed: ClassVar = staticmethod(upstream_checkpointed_block)


def _plain_mlp(w1, b1, w2, b2, x):
    # A porter's own MLP in autograd.numpy: right values, no checkpoint anywhere.
    return relu(anp.dot(x, w1) + b1) @ w2 + b2  # (D,) -> (F,)


class OwnModelWithoutCheckpoint(HipsAutograd):
    """`forward`, `vjp` and `nn_checkpoint_forward` overridden by a plain MLP of the port's own,
    while the base's block (`checkpointed`) still checkpoints: the values are right, and only
    evidence read off the port's own call can tell."""

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        return to_host_array(_plain_mlp(*params_to_arrays(params), as_input(x)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        pullback, _ = make_vjp(_plain_mlp, (0, 1, 2, 3, 4))(*params_to_arrays(params), as_input(x))
        *grads, dx = pullback(np.asarray(cotangent, np.float32))
        return Grads(**arrays_to_params(tuple(grads)).as_dict(), x=to_host_array(dx))

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> Any:
        # The base's checks and Flax's parameters; the computation is the port's own.
        return _exercise(seed, x, features, _plain_mlp)
