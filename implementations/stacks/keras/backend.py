"""Keras on one backend per process: load it, or say which backend holds the process.

Imports Keras (and its backend) only inside `load`.
"""

from __future__ import annotations

import logging
import sys
from types import ModuleType

from ...contract import StackUnavailable
from ...environment import variable_set

BACKENDS = ("jax", "torch", "tensorflow")


def load(backend: str) -> ModuleType:
    """The `keras` module, running on `backend`.

    Keras reads `KERAS_BACKEND` once, when it is first imported, and keeps
    that backend for the life of the process. So: if Keras is not imported
    yet, import it with `KERAS_BACKEND` set to `backend` (the variable is put
    back as it was afterwards, so child processes choose for themselves);
    if it is, it must be on `backend` already.

    **Raises:** `contract.StackUnavailable`, naming both backends, when Keras
    runs on another backend in this process (the port loads in a fresh one);
    `ModuleNotFoundError` when Keras or the backend is not installed.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown Keras backend {backend!r}; expected one of {BACKENDS}")
    if sys.modules.get("keras") is not None:
        import keras

        current = keras.backend.backend()
        if current != backend:
            hint = (
                " (importing TensorFlow imports Keras, on the backend KERAS_BACKEND names, "
                "'tensorflow' by default)"
                if current == "tensorflow"
                else ""
            )
            raise StackUnavailable(
                f"keras is already imported on the {current!r} backend in this process{hint}, "
                f"and a process keeps its first Keras backend; this port needs {backend!r}: "
                "run it in a process of its own"
            )
        return keras
    if backend == "tensorflow":
        from ..tensorflow import runtime  # noqa: F401 - TensorFlow first, with its logs kept out
    before = set(sys.modules)
    with variable_set("KERAS_BACKEND", backend):
        try:
            import keras
        except BaseException:
            # A failed import leaves Keras's submodules behind, their backend
            # chosen; drop them, so that a later load starts afresh.
            for name in set(sys.modules) - before:
                if name == "keras" or name.startswith("keras."):
                    del sys.modules[name]
            raise
    if keras.backend.backend() != backend:  # KERAS_BACKEND beats keras.json; never seen
        raise StackUnavailable(
            f"keras loaded on {keras.backend.backend()!r} although {backend!r} was asked for"
        )
    logging.getLogger("absl").setLevel(logging.ERROR)  # Keras logs through absl when it logs
    return keras
