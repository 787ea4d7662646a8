"""Paddle's block with variables and RNGs: `recompute` replays the mask but updates the
statistics twice; with `preserve_rng_state=False` it draws a fresh mask too, as declared; the
statistics updated outside the region are the fix beside them."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.stacks.paddle.expectations import STATEFUL
from implementations.stacks.paddle.paddle import Paddle as Port
from implementations.stateful import declaration_problems
from tests.support.stateful_steps import SEED, F, gradient_gap, held_to_declaration, inputs


@pytest.mark.parametrize("variant", sorted(Port.state_variants))
@pytest.mark.parametrize("rate", [0.5, 0.0])
def test_each_variant_does_what_it_declares(variant, rate):
    declaration = STATEFUL["paddle"][variant]
    assert declaration_problems(declaration) == []
    held_to_declaration(Port(), variant, declaration, rate=rate)


def test_no_preserve_gradients_are_wrong_and_the_others_are_right():
    assert gradient_gap(Port(), "no_preserve") > 0.1
    assert gradient_gap(Port(), "default") < 1e-5
    assert gradient_gap(Port(), "stats_outside") < 1e-5
    assert STATEFUL["paddle"]["default"].fix == "paddle:stats_outside"


def test_the_instrument_counts_the_draws_and_the_updates():
    x, cotangent = inputs()
    on = Port().state_step(SEED, x, F, 0.5, cotangent, checkpoint=True)
    loose = Port().state_step(SEED, x, F, 0.5, cotangent, checkpoint=True, variant="no_preserve")
    off = Port().state_step(SEED, x, F, 0.5, cotangent, checkpoint=False)
    assert (len(on.recompute_masks), on.updates) == (1, 2)
    assert (len(off.recompute_masks), off.updates) == (0, 1)
    assert np.array_equal(on.recompute_masks[0], on.mask)  # restored, so replayed
    assert 0 < np.mean(loose.recompute_masks[0] != loose.mask) < 1


def test_bad_arguments_are_named_and_the_caller_s_x_is_kept():
    x, cotangent = inputs()
    kept = x.copy()
    Port().state_step(SEED, x, F, 0.5, cotangent)
    assert np.array_equal(x, kept)
    with pytest.raises(ValueError, match="rate"):
        Port().state_step(SEED, x, F, -0.1, cotangent)
    with pytest.raises(ValueError, match="variant"):
        Port().state_step(SEED, x, F, 0.5, cotangent, variant="nope")
