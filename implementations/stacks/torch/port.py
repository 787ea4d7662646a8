"""`TorchPort`: the `Port` base on the torch stack, for any way of running the torch MLP.

The torch ports share the model (`mlp.MLP`), its converters, the exercise's
checks and init, and torch's instrument; they differ in how they run the
module. A subclass may override `run(model, x)` (the eager port calls the
module; the compiled port calls it through `torch.compile`, and brings its
own instrument). Imports torch and numpy.

**Policies.** `checkpoint=` is `True`, `False` or a `Policy` the port
declares. `none` runs the module without a checkpoint, `full` with a plain
one; a selective-checkpoint policy (`save_dots`, `save_named`) runs the
checkpoint with torch's spelling of it, `context_fn=functools.partial(
create_selective_checkpoint_contexts, policy_fn)` (`policies`), where
`save_named` also routes h through the `tag` operator its policy names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ...contract import BackwardRecord, Grads, Params
from ...policies import Policy
from ..base import Port, observes
from ..numpy import out_in
from . import instrument
from . import policies as torch_policies
from .arrays import leaf_input, to_host_array
from .mlp import MLP, STATE_NAMES, build_mlp, exercise_model, state_to_params
from .mlp import tensor as as_tensor
from .stack import STACK


class TorchPort(Port, abstract=True):
    """A `Port` on the torch MLP: the contract built on `run(model, x)`."""

    stack = STACK
    framework = "torch"

    def run(self, model: MLP, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        """The model on x, as this port runs it: here, the module's own call."""
        return model(x)

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The numpy canonical init, loaded into the torch module and exported
        # again, so that the layout converters are part of what is checked.
        params = self.stack.canonical_params(seed, dim, features)
        return state_to_params(build_mlp(params).state_dict())

    def policy_function(self, policy: Policy) -> Callable[..., Any] | None:
        """The selective-checkpoint policy function that runs `policy` (None: none or full)."""
        return torch_policies.POLICY_FUNCTIONS.get(policy.name)

    def model(
        self,
        params: Params,
        checkpoint: Any,
        context_fn: Callable[[], tuple[Any, Any]] | None = None,
    ) -> MLP:
        """The MLP holding `params` as this port runs it under `checkpoint` (a bool or a
        `Policy` it declares). `context_fn` replaces the policy's own (an instrument's)."""
        policy = self.policy(checkpoint)
        function = self.policy_function(policy)
        watch = instrument.active()
        if context_fn is None and watch is not None:  # the instrument is observing this call
            context_fn = watch.context_fn(function)
        elif context_fn is None and function is not None:
            context_fn = torch_policies.context_fn(function)
        return build_mlp(
            params,
            checkpoint=self.checkpoints(policy),
            context_fn=context_fn,
            tag_h=policy.name == "save_named",
            nesting=self.nesting(checkpoint),
        )

    def checkpoints(self, policy: Policy) -> bool:
        """Whether the module runs under `torch.utils.checkpoint` for `policy`."""
        return policy.name != "none"

    def forward(
        self, params: Params, x: np.ndarray, *, checkpoint: bool | Policy = True
    ) -> np.ndarray:
        # x requires grad, as in `vjp`: the checkpoint runs, and a compiling
        # port runs the very forward graph that `vjp` differentiates.
        return to_host_array(self.run(self.model(params, checkpoint), leaf_input(x)))

    def vjp(
        self,
        params: Params,
        x: np.ndarray,
        cotangent: np.ndarray,
        *,
        checkpoint: bool | Policy = True,
    ) -> Grads:
        grads = self.prepared_vjp(params, x, cotangent, checkpoint=checkpoint)()
        return out_in.to_grads(grads[1:], grads[0], to_host_array)

    def prepared_vjp(
        self,
        params: Params,
        x: np.ndarray,
        cotangent: np.ndarray,
        *,
        checkpoint: bool | Policy = True,
    ) -> Callable[[], tuple[torch.Tensor, ...]]:
        """`vjp`'s call: the model and tensors made here, once; the callable runs `run` and
        `torch.autograd.grad`, and returns the gradients of x, then of each parameter."""
        model = self.model(params, checkpoint)
        x = leaf_input(x)
        leaves = [x, *(model.get_parameter(name) for name in STATE_NAMES)]
        cotangent = as_tensor(cotangent)
        return lambda: torch.autograd.grad(self.run(model, x), leaves, cotangent)

    def exercise(self, seed: Any, x: Any, features: Any, **build: Any) -> tuple[torch.Tensor, MLP]:
        """`nn_checkpoint_forward`, and the model it ran (`build` goes to `build_mlp`)."""
        watch = instrument.active()
        if watch is not None and "context_fn" not in build:  # observed: count its regions
            build["context_fn"] = watch.context_fn(None)
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

    # -- evidence: torch's instrument on the port's own calls (`instrument`) ---------------

    @observes("vjp")
    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool | Policy = True
    ) -> BackwardRecord:
        """The instrument on this port's own `vjp(params, x, ones, checkpoint=checkpoint)`:
        whatever a subclass overrides, the evidence is read off the call whose values (c)
        checks."""
        ones = np.ones(params.features, np.float32)
        return instrument.observe(lambda: self.vjp(params, x, ones, checkpoint=checkpoint), x)

    @observes("nn_checkpoint_forward")
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        """The instrument on this port's own `nn_checkpoint_forward(seed, x, features)`, x a
        leaf that requires grad, and the backward pass of its output."""
        x = leaf_input(x)
        return instrument.observe(
            lambda: instrument.backward_of(self.nn_checkpoint_forward(seed, x, features)), x
        )
