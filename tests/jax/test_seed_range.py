"""What jax.random.PRNGKey does with large seeds, pinned, and how the contract follows it."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

from implementations.contract import SEED_MAX  # noqa: E402
from implementations.stacks.jax import flax_linen  # noqa: E402


def _key_data(seed: int) -> np.ndarray:
    return np.asarray(jax.random.key_data(jax.random.PRNGKey(seed)))


@pytest.mark.parametrize("low", [0, 5, 2**31, 2**32 - 1])
@pytest.mark.parametrize("high", [1, 2, 2**8, 2**31 - 1])
def test_prngkey_keeps_the_low_32_bits(low, high):
    # Default x32 mode: the key is [0, seed mod 2**32] for every seed up to 2**63 - 1.
    seed = high * 2**32 + low
    np.testing.assert_array_equal(_key_data(seed), [0, low])


def test_prngkey_accepts_up_to_2_to_the_63_minus_1():
    np.testing.assert_array_equal(_key_data(2**63 - 1), [0, 2**32 - 1])
    with pytest.raises(OverflowError):
        jax.random.PRNGKey(2**63)
    assert SEED_MAX == 2**63 - 1


def test_large_seeds_give_the_result_of_their_low_32_bits():
    x = np.array([0.25, -1.5, 2.0], np.float32)
    for seed in [2**32 + 5, 2**40 + 5, 2**63 - 2**32 + 5]:
        np.testing.assert_array_equal(
            flax_linen.nn_checkpoint_forward(seed, x, 4),
            flax_linen.nn_checkpoint_forward(5, x, 4),
        )
    np.testing.assert_array_equal(
        flax_linen.nn_checkpoint_forward(float(2**40 + 5), x, 4),
        flax_linen.nn_checkpoint_forward(5, x, 4),
    )


def test_seeds_past_the_range_are_refused_by_name():
    x = np.ones(2, np.float32)
    flax_linen.nn_checkpoint_forward(SEED_MAX, x, 2)
    with pytest.raises(ValueError, match="seed"):
        flax_linen.nn_checkpoint_forward(SEED_MAX + 1, x, 2)
    with pytest.raises(ValueError, match="seed"):
        flax_linen.nn_checkpoint_forward(float(2**63), x, 2)
