"""The Keras stack (`keras_jax`, `keras_torch`, `keras_tensorflow`): Keras over a backend.

Keras reads its backend once, when it is first imported (`KERAS_BACKEND`),
so the order matters:

- `on(name)`: loads Keras on the named backend (`backend.load`; raises
  `contract.StackUnavailable` naming both backends when Keras already runs
  on another in this process) and returns the `KerasStack` over that
  backend's stack. Call it before anything imports Keras.
- `backend`: `load(name)`, which imports nothing until called.
- `model`: the exercise's model in Keras (`MLP`, one `keras.RematScope`
  region), the layout converters, and the symbolic (`KerasTensor`)
  exercise. It imports Keras, so a port imports it after `on(...)`.
- `stack`: `KerasStack`, the backend's stack with Keras's arrays unwrapped
  and Keras's own precision report.

Importing this package imports no framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import backend

if TYPE_CHECKING:
    from .stack import KerasStack


def on(name: str) -> KerasStack:
    """Keras loaded on backend `name` ("jax", "torch" or "tensorflow"), as a `Stack`."""
    backend.load(name)
    from .stack import KerasStack  # imports keras: only once its backend is chosen

    return KerasStack(name)


__all__ = ["backend", "on"]
