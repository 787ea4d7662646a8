"""Run in a fresh interpreter: `python -m tests.support.keras_stateful_probe <backend>`.

Loads the Keras port on `backend` (Keras keeps its first backend for the process) and holds
each of its block variants to its declaration (`stateful_steps.held_to_declaration`), at
rate 0.5 and at rate 0; a failed check raises, with its message, and the process exits 1.
Prints one line per variant held: `held <port> <variant> gap <the largest gradient gap
between the checkpoint on and off>`.
"""

from __future__ import annotations

import sys

import implementations
from implementations.stacks.keras.expectations import STATEFUL
from tests.support.stateful_steps import gradient_gap, held_to_declaration

PORTS = {"jax": "keras_jax", "tensorflow": "keras_tensorflow"}


def main(backend: str) -> None:
    name = PORTS[backend]
    port = implementations.load(name)
    for variant in port.state_variants:
        declaration = STATEFUL[name][variant]
        held_to_declaration(port, variant, declaration, rate=0.0)
        held_to_declaration(port, variant, declaration)
        print(f"held {name} {variant} gap {gradient_gap(port, variant):.3g}")


if __name__ == "__main__":
    main(sys.argv[1])
