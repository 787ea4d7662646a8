"""autograd's block with variables and RNGs: a checkpoint that traces the block again (the
port's, in backward; autograd.checkpoint, in forward) draws a fresh mask from numpy's global
generator and updates the statistics twice, as declared; a mask from an explicit seed is the
fix beside them."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.stacks.autograd.expectations import STATEFUL
from implementations.stacks.autograd.hips_autograd import HipsAutograd as Port
from implementations.stateful import declaration_problems
from tests.support.stateful_steps import SEED, F, gradient_gap, held_to_declaration, inputs


@pytest.mark.parametrize("variant", sorted(Port.state_variants))
@pytest.mark.parametrize("rate", [0.5, 0.0])
def test_each_variant_does_what_it_declares(variant, rate):
    declaration = STATEFUL["hips_autograd"][variant]
    assert declaration_problems(declaration) == []
    held_to_declaration(Port(), variant, declaration, rate=rate)


def test_the_default_gradients_are_wrong_and_the_fix_beside_it_is_right():
    assert gradient_gap(Port(), "default") > 0.1
    assert gradient_gap(Port(), "upstream") > 0.1
    assert gradient_gap(Port(), "explicit_seed") < 1e-5
    assert STATEFUL["hips_autograd"]["default"].fix == "hips_autograd:explicit_seed"


def test_the_instrument_counts_the_draws_and_the_updates():
    x, cotangent = inputs()
    on = Port().state_step(SEED, x, F, 0.5, cotangent, checkpoint=True)
    off = Port().state_step(SEED, x, F, 0.5, cotangent, checkpoint=False)
    assert (len(on.recompute_masks), on.updates) == (1, 2)
    assert (len(off.recompute_masks), off.updates) == (0, 1)
    assert 0 < np.mean(on.recompute_masks[0] != on.mask) < 1


def test_bad_arguments_are_named_and_the_caller_s_x_is_kept():
    x, cotangent = inputs()
    kept = x.copy()
    Port().state_step(SEED, x, F, 0.5, cotangent)
    assert np.array_equal(x, kept)
    with pytest.raises(ValueError, match="rate"):
        Port().state_step(SEED, x, F, -0.1, cotangent)
    with pytest.raises(ValueError, match="variant"):
        Port().state_step(SEED, x, F, 0.5, cotangent, variant="nope")
