"""`KerasPort`: what the three Keras ports share on top of `Port`. Imports Keras.

Import it after `implementations.stacks.keras.on(...)` has loaded Keras on
the port's backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ...contract import Grads, Params
from ...policies import none_and_full
from ...stateful_port import OffersStatefulBlock
from ..base import Port
from . import model

#: The composition cases in Keras's own API (`model.Nested`).
COMPOSITIONS = {
    "once": 'the MLP made under keras.RematScope(mode="full")',
    "twice": 'keras.remat(mlp), mlp made under keras.RematScope(mode="full")',
    "under_trainer": 'an outer layer made under keras.RematScope(mode="full") whose call runs '
    "the MLP, made under it too",
}


class KerasPort(OffersStatefulBlock, Port, abstract=True):
    """A `Port` whose model is `model.MLP`, made under `keras.RematScope(mode)`."""

    framework = "keras"
    checkpoint_api = 'keras.RematScope(mode="full")'
    policies, inexpressible = none_and_full(
        "no RematScope",
        'keras.RematScope(mode="full")',
        save_dots="RematScope has no per-operation policy: its modes only choose which layers "
        "are remat regions",
        save_named="no names: list_of_layers and activations only move region boundaries, and "
        "activations saves more than no remat (a documented degradation)",
        offload_dots="Keras remat has no offload",
        budget="no memory budget: larger_than is a per-layer size threshold, not a budget",
    )
    #: The `RematScope` mode of the checkpointed model (mutants change it).
    mode: str | None = model.FULL

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The stack's canonical init (the backend's), loaded into a Keras model and read back.
        return model.model_params(model.reuse(self.stack.canonical_params(seed, dim, features)))

    def reused(self, params: Params, checkpoint: Any, **kwargs: Any) -> model.MLP | model.Nested:
        """The kept model of `params`' shapes holding `params`, checkpointed or plain, its
        region composed as `checkpoint` asks (`model.Nested`)."""
        mode = self.mode if self.policy(checkpoint) else None
        return model.reuse(params, mode=mode, nesting=self.nesting(checkpoint), **kwargs)


class StatefulKerasPort(KerasPort, abstract=True):
    """A Keras port whose model runs stateful, its weights the backend's variables
    (torch, TensorFlow): forward and vjp call the kept model of the params.

    A port writes `model_input(x)` (x as the backend's input) and
    `gradients(mlp, x, weights, cotangent) -> (dx, weight grads)`. Its model composes its
    region as `checkpoint=` asks (`model.Nested`, `COMPOSITIONS`).
    """

    compositions: ClassVar[dict[str, str]] = COMPOSITIONS

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        mlp = self.reused(params, checkpoint)
        return self.to_numpy(mlp(self.model_input(x)))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        dx, grads = self.prepared_vjp(params, x, cotangent, checkpoint=checkpoint)()
        return Grads.of(model.weights_to_params(grads), self.to_numpy(dx))

    def prepared_vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Callable[[], tuple[Any, list]]:
        """`vjp`'s call: the reused model loaded with `params` here, once (the weights' copy
        into its variables took 54 of keras_torch's 89 ms here); the callable runs
        `gradients`, which takes x and the cotangent as numpy, `(F,)` and `(D,)` copies."""
        mlp = self.reused(params, checkpoint)
        weights = [v.value for v in mlp.trainable_variables]  # the backend's variables
        return lambda: self.gradients(mlp, x, weights, cotangent)

    def model_input(self, x: np.ndarray) -> Any:
        """x as the backend's float32 input to the model."""
        raise NotImplementedError(f"port {self.name} must define model_input")

    def gradients(
        self, mlp: model.MLP, x: np.ndarray, weights: list, cotangent: np.ndarray
    ) -> tuple[Any, list]:
        """The pullback of `cotangent` through `mlp` at x, to x and to `weights`."""
        raise NotImplementedError(f"port {self.name} must define gradients")
