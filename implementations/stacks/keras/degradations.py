"""Probes of Keras's documented degradation (`expectations.py`): `(holds, seen)`. Imports Keras
on its JAX backend, where the JAX instrument reads the residuals: call it in a process that has
not imported Keras with another backend (Keras keeps its first).

The version sweep (`python -m conformance versions`) runs it at every version it installs;
tests/keras/test_keras_policies.py pins it at the tested one.
"""

from __future__ import annotations

import os
import sys
from typing import Any

D, F = 3, 4


def _keras() -> Any:
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = "jax"
    import keras

    if keras.backend.backend() != "jax":
        raise RuntimeError(
            f"this probe needs Keras on its JAX backend, and this process has Keras on "
            f"{keras.backend.backend()}: run it in a fresh process"
        )
    return keras


def kept(mode: str | None) -> dict[str, Any]:
    """What the backward pass keeps for Dense(F, relu) -> Dense(F) made under
    `RematScope(mode)`: its bytes, roles and count."""
    import jax.numpy as jnp

    from ..jax import instrument as evidence  # imports jax: only where a probe runs

    keras = _keras()
    # "activations" wraps the relu (the layer's activation) in its own remat.
    with keras.RematScope(mode=mode):
        model = keras.Sequential(
            [keras.Input((D,)), keras.layers.Dense(F, activation="relu"), keras.layers.Dense(F)]
        )
    weights = [jnp.asarray(w) for w in model.trainable_variables]

    def run(weights, x):
        y, _ = model.stateless_call(weights, [], x[None, :])
        return y[0]

    record = evidence.backward_record(
        run, (weights, jnp.ones(D)), ("parameter", "input"), jnp.ones(F)
    )
    return {
        "bytes": record.saved_bytes,
        "roles": sorted(record.saved_roles),
        "kept": len(record.kept),
    }


def activations_saves_more_than_none() -> tuple[bool, str]:
    """`RematScope(mode="activations")` keeps more bytes than no remat at all: a float h where
    no remat keeps relu's boolean mask."""
    none, activations = kept(None), kept("activations")
    seen = (
        f"none keeps {none['roles']} ({none['bytes']} B), activations keeps "
        f"{activations['roles']} ({activations['bytes']} B)"
    )
    return activations["bytes"] > none["bytes"], seen
