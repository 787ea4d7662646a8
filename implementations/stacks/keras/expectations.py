"""Keras's ports are held to their backend's instrument (their manifest entries name it); what
Keras itself adds is a documented degradation."""

from implementations.expectations import Degradation, Expectations
from implementations.stacks.keras.torch_declarations import KERAS_TORCH

EXPECTATIONS = Expectations(
    # The block with variables and RNGs (property (l)).
    stateful={"keras_torch": KERAS_TORCH},
    degradations=(
        Degradation(
            "keras",
            "save_named",
            'RematScope(mode="activations") saves more than no remat at all: it cannot stand '
            "for save_named",
            "keras 3.15.1",
            'mode="activations" saves more than none',
            probe="implementations.stacks.keras.degradations:activations_saves_more_than_none",
        ),
    ),
)
