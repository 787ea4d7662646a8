"""`KerasPort`: what the three Keras ports share on top of `Port`. Imports Keras.

Import it after `implementations.stacks.keras.on(...)` has loaded Keras on
the port's backend.
"""

from __future__ import annotations

from typing import Any

from ...contract import Params
from ..base import Port
from . import model


class KerasPort(Port, abstract=True):
    """A `Port` whose model is `model.MLP`, made under `keras.RematScope(mode)`."""

    framework = "keras"
    checkpoint_api = 'keras.RematScope(mode="full")'
    #: The `RematScope` mode of the checkpointed model (mutants change it).
    mode: str | None = model.FULL

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # The stack's canonical init (the backend's), loaded into a Keras model and read back.
        return model.model_params(model.reuse(self.stack.canonical_params(seed, dim, features)))

    def reused(self, params: Params, checkpoint: bool, **kwargs: Any) -> model.MLP:
        """The kept model of `params`' shapes holding `params`, checkpointed or plain."""
        return model.reuse(params, mode=self.mode if checkpoint else None, **kwargs)
