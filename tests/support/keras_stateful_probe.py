"""Run in a fresh interpreter: `python -m tests.support.keras_stateful_probe <backend>`.

Loads the Keras port on `backend` (Keras keeps its first backend for the process) and holds
each of its block variants to its declaration (`stateful_steps.held_to_declaration`), at
rate 0.5 and at rate 0; a failed check raises, with its message, and the process exits 1.
Prints one line per variant held: `held <port> <variant> gap <the largest gradient gap
between the checkpoint on and off>`.
"""

from __future__ import annotations

import sys

import numpy as np

import implementations
from implementations.stacks.keras.expectations import STATEFUL
from tests.support.stateful_steps import held_to_declaration

PORTS = {"jax": "keras_jax", "tensorflow": "keras_tensorflow"}


def main(backend: str) -> None:
    name = PORTS[backend]
    port = implementations.load(name)
    for variant in port.state_variants:
        declaration = STATEFUL[name][variant]
        held_to_declaration(port, variant, declaration, rate=0.0)
        on = held_to_declaration(port, variant, declaration)
        off = port.state_step(3, *_inputs(), checkpoint=False, variant=variant)
        gap = max(float(np.abs(on.grads[n] - off.grads[n]).max()) for n in on.grads)
        print(f"held {name} {variant} gap {gap:.3g}")


def _inputs():
    from tests.support.stateful_steps import F, inputs

    x, cotangent = inputs()
    return x, F, 0.5, cotangent


if __name__ == "__main__":
    main(sys.argv[1])
