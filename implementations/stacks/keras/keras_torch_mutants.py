"""Mutants of the Keras port on the torch backend. Loading them loads Keras on torch, so
in a process where Keras runs on another backend they are unavailable
(`contract.StackUnavailable`) and run in a process of their own."""

from __future__ import annotations

from implementations.stacks.keras import keras_torch as port


class RematScopeNone(port.KerasTorch):
    """The model made under `keras.RematScope(mode=None)`: Keras's way to turn remat off."""

    mode = None
