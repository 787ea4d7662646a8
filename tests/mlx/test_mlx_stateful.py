"""MLX's block with variables and RNGs: `nn.utils.checkpoint` over `nn.Dropout` draws a fresh
mask from the global key and updates the statistics twice, as declared; an explicit key with
the statistics updated outside the region is the fix beside it."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.stacks.mlx.expectations import STATEFUL
from implementations.stacks.mlx.mlx import Mlx
from implementations.stateful import declaration_problems
from tests.support.stateful_steps import SEED, F, gradient_gap, held_to_declaration, inputs


@pytest.mark.parametrize("variant", sorted(Mlx.state_variants))
@pytest.mark.parametrize("rate", [0.5, 0.0])
def test_each_variant_does_what_it_declares(variant, rate):
    declaration = STATEFUL["mlx"][variant]
    assert declaration_problems(declaration) == []
    held_to_declaration(Mlx(), variant, declaration, rate=rate)


def test_the_default_gradients_are_wrong_and_the_fix_beside_it_is_right():
    assert gradient_gap(Mlx(), "default") > 0.1
    assert gradient_gap(Mlx(), "explicit_key") < 1e-5
    assert STATEFUL["mlx"]["default"].fix == "mlx:explicit_key"


def test_the_instrument_counts_the_draws_and_the_updates():
    x, cotangent = inputs()
    on = Mlx().state_step(SEED, x, F, 0.5, cotangent, checkpoint=True)
    off = Mlx().state_step(SEED, x, F, 0.5, cotangent, checkpoint=False)
    assert (len(on.recompute_masks), on.updates) == (1, 2)
    assert (len(off.recompute_masks), off.updates) == (0, 1)
    assert 0 < np.mean(on.recompute_masks[0] != on.mask) < 1


def test_bad_arguments_are_named_and_the_caller_s_x_is_kept():
    x, cotangent = inputs()
    kept = x.copy()
    Mlx().state_step(SEED, x, F, 0.5, cotangent)
    assert np.array_equal(x, kept)
    with pytest.raises(ValueError, match="rate"):
        Mlx().state_step(SEED, x, F, -0.1, cotangent)
    with pytest.raises(ValueError, match="variant"):
        Mlx().state_step(SEED, x, F, 0.5, cotangent, variant="nope")
