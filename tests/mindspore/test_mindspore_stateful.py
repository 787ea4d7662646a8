"""MindSpore's block with variables and RNGs: `Cell.recompute()` replays the mask but assigns
the statistics twice; `mindspore.recompute` draws a fresh mask too, as declared; the statistics
applied once after the step are the fix beside them."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.stacks.mindspore.expectations import STATEFUL
from implementations.stacks.mindspore.mindspore import MindSpore as Port
from implementations.stateful import declaration_problems
from tests.support.stateful_steps import SEED, F, gradient_gap, held_to_declaration, inputs


@pytest.mark.parametrize("variant", sorted(Port.state_variants))
@pytest.mark.parametrize("rate", [0.5, 0.0])
def test_each_variant_does_what_it_declares(variant, rate):
    declaration = STATEFUL["mindspore"][variant]
    assert declaration_problems(declaration) == []
    held_to_declaration(Port(), variant, declaration, rate=rate)


def test_the_function_s_gradients_are_wrong_and_the_others_are_right():
    assert gradient_gap(Port(), "function") > 0.1
    assert gradient_gap(Port(), "default") < 1e-5
    assert gradient_gap(Port(), "stats_outside") < 1e-5
    assert STATEFUL["mindspore"]["default"].fix == "mindspore:stats_outside"


def test_the_instrument_counts_the_draws_and_the_updates():
    x, cotangent = inputs()
    on = Port().state_step(SEED, x, F, 0.5, cotangent, checkpoint=True)
    function = Port().state_step(SEED, x, F, 0.5, cotangent, checkpoint=True, variant="function")
    off = Port().state_step(SEED, x, F, 0.5, cotangent, checkpoint=False)
    assert (len(on.recompute_masks), on.updates) == (1, 2)
    assert (len(off.recompute_masks), off.updates) == (0, 1)
    assert np.array_equal(on.recompute_masks[0], on.mask)  # Cell.recompute() replays
    assert 0 < np.mean(function.recompute_masks[0] != function.mask) < 1


def test_bad_arguments_are_named_and_the_caller_s_x_is_kept():
    x, cotangent = inputs()
    kept = x.copy()
    Port().state_step(SEED, x, F, 0.5, cotangent)
    assert np.array_equal(x, kept)
    with pytest.raises(ValueError, match="rate"):
        Port().state_step(SEED, x, F, -0.1, cotangent)
    with pytest.raises(ValueError, match="variant"):
        Port().state_step(SEED, x, F, 0.5, cotangent, variant="nope")
