"""`TorchPort`: the `Port` base on the torch stack, for any way of running the torch MLP.

The torch ports share the model (`mlp.MLP`), its converters, the exercise's
checks and init, and torch's instrument; they differ in how they run the
module. A subclass may override `run(model, x)` (the eager port calls the
module; the compiled port calls it through `torch.compile`, and brings its
own instrument). Imports torch and numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ...contract import BackwardRecord, Grads, Params
from ..base import Port
from ..numpy import out_in
from .arrays import leaf_input, to_host_array
from .mlp import MLP, STATE_NAMES, build_mlp, exercise_model, state_to_params
from .mlp import tensor as as_tensor
from .stack import STACK


class TorchPort(Port, abstract=True):
    """A `Port` on the torch MLP: the contract built on `run(model, x)`."""

    stack = STACK
    framework = "torch"
    extra = "torch"

    def run(self, model: MLP, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        """The model on x, as this port runs it: here, the module's own call."""
        return model(x)

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The numpy canonical init, loaded into the torch module and exported
        # again, so that the layout converters are part of what is checked.
        params = self.stack.canonical_params(seed, dim, features)
        return state_to_params(build_mlp(params).state_dict())

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        # x requires grad, as in `vjp`: the checkpoint runs, and a compiling
        # port runs the very forward graph that `vjp` differentiates.
        return to_host_array(self.run(build_mlp(params, checkpoint=checkpoint), leaf_input(x)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        model = build_mlp(params, checkpoint=checkpoint)
        x = leaf_input(x)
        out = self.run(model, x)
        leaves = [x, *(model.get_parameter(name) for name in STATE_NAMES)]
        grads = torch.autograd.grad(out, leaves, as_tensor(cotangent))
        return out_in.to_grads(grads[1:], grads[0], to_host_array)

    def exercise(self, seed: Any, x: Any, features: Any, **build: Any) -> tuple[torch.Tensor, MLP]:
        """`nn_checkpoint_forward`, and the model it ran (`build` goes to `build_mlp`)."""
        x, model = exercise_model(seed, x, features, **build)
        return self.run(model, x), model  # (D,) -> (F,)

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> torch.Tensor:
        """The exercise: Flax's canonical MLP for `PRNGKey(seed)`, applied to x through a
        checkpoint.

        **Arguments:**

        - `seed`: a non-negative integer-valued scalar (int, integral float, 0-d array).
        - `x`: a finite real vector of shape `(D,)`: a tensor on any device, a
          numpy array or a list. It is never modified, and gradients flow back
          to it when it requires grad.
        - `features`: the width F, a positive integer-valued scalar.

        **Returns:** the `(F,)` float32 output, on x's device (the CPU for non-tensors).
        """
        return self.exercise(seed, x, features)[0]

    # -- evidence: torch's instrument (`STACK.record`) ------------------------------------

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        def run(x: torch.Tensor, context_fn) -> tuple[torch.Tensor, MLP]:
            model = build_mlp(params, checkpoint=checkpoint, context_fn=context_fn)
            return self.run(model, x), model

        return self.stack.record(run, x)

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        return self.stack.record(
            lambda x, context_fn: self.exercise(seed, x, features, context_fn=context_fn), x
        )
