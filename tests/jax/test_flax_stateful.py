"""The canonical block with variables and RNGs (Flax linen `nn.checkpoint(Block)`): its init is
the first exercise's, bit for bit; its step is the numpy computation for the mask it drew."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flax")

from implementations import stateful_reference
from implementations.stacks.jax import flax_linen_stateful as linen
from implementations.stacks.jax.flax_linen import FlaxLinen
from implementations.stacks.jax.stateful import initial

B, D, F, RATE = 8, 5, 4, 0.5


def _inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(B, D)).astype(np.float32), rng.normal(size=(B, F)).astype(np.float32)


def test_the_block_draws_the_first_exercise_s_parameters_and_flax_s_statistics_bit_for_bit():
    variables = linen.linen_init(3, D, F, RATE)
    first = FlaxLinen().init_params(3, D, F)
    arrays = initial(3, D, F)
    params, stats = variables["params"], variables["batch_stats"]["BatchNorm_0"]
    for name, flax_array, first_array in (
        ("w1", params["Dense_0"]["kernel"], first.w1),
        ("b1", params["Dense_0"]["bias"], first.b1),
        ("w2", params["Dense_1"]["kernel"], first.w2),
        ("b2", params["Dense_1"]["bias"], first.b2),
    ):
        assert np.array_equal(flax_array, first_array), name
        assert np.array_equal(arrays[name], first_array), name
    assert np.array_equal(params["BatchNorm_0"]["scale"], arrays["gamma"])
    assert np.array_equal(params["BatchNorm_0"]["bias"], arrays["beta"])
    assert np.array_equal(stats["mean"], arrays["mean"])
    assert np.array_equal(stats["var"], arrays["var"])


def test_the_step_is_the_numpy_block_for_the_mask_it_drew_and_the_recompute_replays_it():
    x, cotangent = _inputs()
    step = FlaxLinen().state_step(3, x, F, RATE, cotangent, checkpoint=True)
    assert step.mask.shape == (B, F)
    assert 0 < step.mask.mean() < 1
    assert len(step.recompute_masks) == 1
    assert np.array_equal(step.recompute_masks[0], step.mask)
    arrays = initial(3, D, F)
    expected = stateful_reference.step(arrays, x, step.mask, RATE, cotangent)
    bounds = stateful_reference.bounds(arrays, x, step.mask, RATE, cotangent, expected)
    assert np.all(np.abs(step.y - expected.y) <= bounds["y"])
    for name, grad in expected.grads.items():
        assert np.all(np.abs(step.grads[name] - grad) <= bounds[name]), name
    mean, var = stateful_reference.running(expected.mean, expected.var, B)
    assert np.all(np.abs(step.running_mean - mean) <= bounds["mean"])
    assert np.all(np.abs(step.running_var - var) <= bounds["var"])
    assert step.rng_before == step.rng_after  # JAX's key is a value: nothing moves it


def test_without_the_checkpoint_nothing_is_recomputed_and_the_caller_s_x_is_kept():
    x, cotangent = _inputs()
    kept = x.copy()
    step = FlaxLinen().state_step(3, x, F, RATE, cotangent, checkpoint=False)
    assert step.recompute_masks == ()
    assert np.array_equal(x, kept)
    with pytest.raises(ValueError, match="rate"):
        FlaxLinen().state_step(3, x, F, 1.0, cotangent)
