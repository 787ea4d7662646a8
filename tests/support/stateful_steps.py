"""A port's block with variables and RNGs held to its declaration on one fixed case.

`held_to_declaration(port, variant, declaration)` runs the port's `state_step` with the
checkpoint on and off from the same seed, and applies property (l)'s own checks of replay,
the stream and the state (`conformance.checking.properties.l_state`) against the numpy block
on the numpy init's parameters (never the port's own numbers); (l.4)'s law, sixteen steps
more, is left to the suite's run of (l). A failed check raises `CheckFailure`, naming the
part.
"""

from __future__ import annotations

import numpy as np

from conformance.checking.properties import l_state
from conformance.checking.strategies import StateCase
from implementations.stacks.numpy import canonical_params
from implementations.stateful import StateDeclaration, StateStep
from implementations.stateful_arguments import initial

B, D, F, RATE, SEED = 8, 5, 4, 0.5, 3


def inputs() -> tuple[np.ndarray, np.ndarray]:
    """x `(B, D)` and the cotangent `(B, F)`."""
    rng = np.random.default_rng(0)
    return rng.normal(size=(B, D)).astype(np.float32), rng.normal(size=(B, F)).astype(np.float32)


def held_to_declaration(
    port, variant: str, declaration: StateDeclaration, rate: float = RATE
) -> StateStep:
    """Check one variant of `port` against `declaration`; return the checkpointed step."""
    x, cotangent = inputs()
    case = StateCase(SEED, x, F, rate, cotangent)
    arrays = initial(canonical_params(SEED, D, F))
    on = port.state_step(SEED, x, F, rate, cotangent, checkpoint=True, variant=variant)
    off = port.state_step(SEED, x, F, rate, cotangent, checkpoint=False, variant=variant)
    l_state.check_replay(port, declaration, on, off, case, arrays)
    l_state.check_stream(port, declaration, on, off, rate)
    l_state.check_state(port, declaration, on, off, case, arrays, None)
    return on


def gradient_gap(port, variant: str) -> float:
    """The largest difference between the gradients with the checkpoint on and off, from the
    same seed (the finding in one number: 0 where the recompute replays)."""
    x, cotangent = inputs()
    on, off = (
        port.state_step(SEED, x, F, RATE, cotangent, checkpoint=c, variant=variant)
        for c in (True, False)
    )
    return max(float(np.abs(on.grads[n] - off.grads[n]).max()) for n in on.grads)
