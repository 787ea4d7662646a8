"""`TorchPort`: the contract on the torch MLP, for any way of running it. Imports torch and numpy.

The torch ports share the model (`mlp.MLP`), its converters and the
exercise's checks and init, and differ in how they run the module and in
the instrument their evidence reads. A subclass may override `run(model, x)`
(the eager port calls the module; the compiled port calls it through
`torch.compile`) and defines `backward_record` and `exercise_record`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._canonical_init import canonical_params
from ..contract import Grads, Implementation, Params
from . import arrays
from .arrays import from_host_array, leaf_input, to_host_array
from .mlp import (
    MLP,
    STATE_NAMES,
    build_mlp,
    canonical_arrays,
    exercise_model,
    state_to_params,
    tensor,
)


class TorchPort(Implementation):
    """An `Implementation` on the torch MLP: everything but the evidence, built on `run`."""

    framework = "torch"
    distributions = ("torch",)

    def run(self, model: MLP, x: torch.Tensor) -> torch.Tensor:  # (D,) -> (F,)
        """The model on x, as this port runs it: here, the module's own call."""
        return model(x)

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The numpy canonical init, loaded into the torch module and exported
        # again, so that the layout converters are part of what is checked.
        params = canonical_params(seed, dim, features)
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
        grads = torch.autograd.grad(out, leaves, tensor(cotangent))
        canonical = canonical_arrays(dict(zip(STATE_NAMES, grads[1:], strict=True)))
        return Grads(**canonical, x=to_host_array(grads[0]))

    def exercise(self, seed: Any, x: Any, features: Any, **build: Any) -> tuple[torch.Tensor, MLP]:
        """`nn_checkpoint_forward`, and the model it ran (`build` goes to `build_mlp`)."""
        x, model = exercise_model(seed, x, features, **build)
        return self.run(model, x), model  # (D,) -> (F,)

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> torch.Tensor:
        return self.exercise(seed, x, features)[0]

    def to_numpy(self, array: Any) -> np.ndarray:
        return to_host_array(array)

    def from_numpy(self, array: np.ndarray) -> torch.Tensor:
        return from_host_array(array)

    def pin_matmul_precision(self) -> None:
        arrays.pin_matmul_precision()

    def matmul_precision(self) -> dict[str, str]:
        """torch's float32 matmul settings as this process found them, and once pinned."""
        return arrays.matmul_precision()
