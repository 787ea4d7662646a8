"""A port's block with variables and RNGs held to its declaration on one fixed case.

`held_to_declaration(port, variant, declaration)` runs the port's `state_step` with the
checkpoint on and off from the same seed, and applies property (l)'s own checks of replay,
the stream and the state (`conformance.checking.properties.l_state`) against the numpy block
on the numpy init's parameters (never the port's own numbers); (l.4)'s law, sixteen steps
more, is left to the suite's run of (l). A failed check raises `ConformanceError`, naming the
part. `StatefulPortChecks`: the tests every stack's port runs on it, given its tables.
"""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking.properties import l_state
from conformance.checking.strategies import StateCase
from implementations.stacks.numpy import canonical_params
from implementations.stateful import StateDeclaration, StateStep, declaration_problems
from implementations.stateful_port import initial

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


class StatefulPortChecks:
    """A stack's tests of its block with variables and RNGs: subclass as `Test...`, setting

    - `port`: the port class; `table`: its declarations, variant -> `StateDeclaration`;
    - `wrong`, `right`: the variants whose gradients differ with the checkpoint on and off
      (the finding), and those whose do not (the fix beside it);
    - `counts`: variant -> (recompute masks, updates, whether the recompute replayed), as the
      port's instrument counts them with the checkpoint on.
    """

    port: type
    table: dict[str, StateDeclaration]
    wrong: tuple[str, ...] = ()
    right: tuple[str, ...] = ()
    counts: dict[str, tuple[int, int, bool]] = {}  # noqa: RUF012 - a subclass's table, read only

    def test_each_variant_does_what_it_declares(self):
        assert sorted(self.table) == sorted(self.port.state_variants)
        for variant, declaration in self.table.items():
            assert declaration_problems(declaration) == [], variant
            for rate in (RATE, 0.0):
                held_to_declaration(self.port(), variant, declaration, rate=rate)

    def test_the_finding_in_numbers_and_the_fix_beside_it(self):
        assert sorted((*self.wrong, *self.right)) == sorted(self.table)
        for variant in self.wrong:
            assert gradient_gap(self.port(), variant) > 0.1, variant
        for variant in self.right:
            assert gradient_gap(self.port(), variant) < 1e-5, variant
        for variant in self.wrong:
            assert self.table[variant].fix.split(":")[1] in self.right, variant

    def test_the_instrument_counts_the_draws_and_the_updates(self):
        x, cotangent = inputs()
        for variant, (recomputes, updates, replayed) in self.counts.items():
            on = self.port().state_step(SEED, x, F, RATE, cotangent, True, variant)
            off = self.port().state_step(SEED, x, F, RATE, cotangent, False, variant)
            assert (len(on.recompute_masks), on.updates) == (recomputes, updates), variant
            assert (len(off.recompute_masks), off.updates) == (0, 1), variant
            changed = np.mean(on.recompute_masks[-1] != on.mask)
            assert (changed == 0) == replayed, (variant, changed)

    def test_bad_arguments_are_named_and_the_caller_s_x_is_kept(self):
        x, cotangent = inputs()
        kept = x.copy()
        self.port().state_step(SEED, x, F, RATE, cotangent)
        assert np.array_equal(x, kept)
        for bad, word in (
            ({"rate": 1.0}, "rate"),
            ({"variant": "nope"}, "variant"),
            ({"cotangent": cotangent[:, :2]}, "cotangent"),
        ):
            arguments = {"rate": RATE, "cotangent": cotangent, **bad}
            with pytest.raises(ValueError, match=word):
                self.port().state_step(SEED, x, F, **arguments)
