"""Run in a fresh interpreter by tests/keras/test_keras_torch_stateful.py: Keras on torch,
the block with variables and RNGs, one step with the checkpoint on and off; prints the two
`StateStep`s on the wire (JSON) as the last line."""

from __future__ import annotations

import json

import numpy as np

B, D, F, RATE, SEED = 8, 5, 4, 0.5, 3


def main() -> None:
    from implementations.stacks.keras.keras_torch import KerasTorch

    rng = np.random.default_rng(0)
    x, cotangent = rng.normal(size=(B, D)).astype(np.float32), rng.normal(size=(B, F))
    port = KerasTorch()
    steps = {
        str(on): port.state_step(SEED, x, F, RATE, cotangent.astype(np.float32), on).to_wire()
        for on in (False, True)
    }
    print(json.dumps({"x": x.tolist(), "cotangent": cotangent.tolist(), "steps": steps}))


if __name__ == "__main__":
    main()
