"""TensorFlow's block with variables and RNGs: `tf.recompute_grad` over `tf.nn.dropout` draws a
fresh mask and updates the statistics twice, as declared; `stateless_dropout` replays."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.stacks.tensorflow.expectations import STATEFUL
from implementations.stacks.tensorflow.tensorflow import TensorFlow
from implementations.stateful import declaration_problems
from tests.support.stateful_steps import SEED, D, F, gradient_gap, held_to_declaration, inputs


@pytest.mark.parametrize("variant", sorted(TensorFlow.state_variants))
def test_each_variant_does_what_it_declares(variant):
    declaration = STATEFUL["tensorflow"][variant]
    assert declaration_problems(declaration) == []
    held_to_declaration(TensorFlow(), variant, declaration)


def test_the_default_gradients_are_wrong_and_the_fix_beside_it_is_right():
    # The finding, in numbers: the same seed, the checkpoint on and off.
    port = TensorFlow()
    assert gradient_gap(port, "default") > 0.1
    assert gradient_gap(port, "stateless") < 1e-5
    assert STATEFUL["tensorflow"]["default"].fix == "tensorflow:stateless"


def test_at_rate_0_nothing_is_drawn_and_the_step_is_the_canonical_s():
    held_to_declaration(TensorFlow(), "default", STATEFUL["tensorflow"]["default"], rate=0.0)


def test_bad_arguments_are_named_and_the_caller_s_x_is_kept():
    x, cotangent = inputs()
    kept = x.copy()
    port = TensorFlow()
    port.state_step(SEED, x, F, 0.5, cotangent)
    assert np.array_equal(x, kept)
    with pytest.raises(ValueError, match="rate"):
        port.state_step(SEED, x, F, 1.0, cotangent)
    with pytest.raises(ValueError, match="variant"):
        port.state_step(SEED, x, F, 0.5, cotangent, variant="nope")
    with pytest.raises(ValueError, match="cotangent"):
        port.state_step(SEED, x, F, 0.5, cotangent[:, :2])
    assert x.shape == (8, D)
