"""keras_torch on the block with variables and RNGs (issue 78), in a fresh interpreter (Keras
keeps its first backend): held to its declaration
(`implementations/stacks/keras/torch_declarations.py`) by numbers: the forward against the
numpy block for the mask seen, the gradients for the mask the recompute drew, the
SeedGenerator's state, and the moving statistics against the count model."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from implementations import stateful_reference
from implementations.stacks.keras.torch_declarations import KERAS_TORCH
from implementations.stacks.numpy import canonical_params
from implementations.stateful import StateStep
from tests.support import keras_torch_state_probe as probe
from tests.support.helpers import ROOT

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="16 s alone: Keras and torch load in a new process"),
]
DECLARED = KERAS_TORCH["default"]


@pytest.fixture(scope="module")
def seen():
    for module in ("keras", "torch"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.keras_torch_state_probe"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "KERAS_BACKEND": "torch"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    steps = {on: StateStep.from_wire(found["steps"][on]) for on in ("False", "True")}
    return np.float32(found["x"]), np.float32(found["cotangent"]), steps["False"], steps["True"]


def _arrays():
    p = canonical_params(probe.SEED, probe.D, probe.F)
    ones, zeros = np.ones(probe.F), np.zeros(probe.F)
    return {"w1": p.w1, "b1": p.b1, "gamma": ones, "beta": zeros, "w2": p.w2, "b2": p.b2}


def _within(found, expected, bound, what):
    excess = np.abs(np.asarray(found, np.float64) - expected) - bound
    assert np.all(excess <= 0), f"{what}: beyond the bound by {excess.max():.3g}"


def test_the_recompute_draws_a_fresh_mask_that_the_gradients_follow(seen):
    x, cotangent, off, on = seen
    assert np.array_equal(on.mask, off.mask)
    assert off.recompute_masks == ()
    fresh = [m for m in on.recompute_masks if not np.array_equal(m, on.mask)]
    assert len(on.recompute_masks) == 1
    assert len(fresh) == DECLARED.degradation("replay").count
    arrays, rate = _arrays(), probe.RATE
    for step, mask, what in ((off, off.mask, "off"), (on, on.recompute_masks[0], "on")):
        expected = stateful_reference.step(arrays, x, mask, rate, cotangent)
        bounds = stateful_reference.bounds(arrays, x, mask, rate, cotangent, expected)
        for name, grad in expected.grads.items():
            _within(step.grads[name], grad, bounds[name], f"{what} {name}")
    forward = stateful_reference.step(arrays, x, on.mask, rate, cotangent)
    bounds = stateful_reference.bounds(arrays, x, on.mask, rate, cotangent, forward)
    _within(on.y, forward.y, bounds["y"], "y")


def test_the_seed_generator_moves_and_the_moving_statistics_update_twice(seen):
    x, cotangent, off, on = seen
    assert on.rng_before == off.rng_before == (probe.SEED, 0)
    assert off.rng_after == (probe.SEED, 1)  # one draw
    assert (on.rng_after == off.rng_after) == DECLARED.stream_kept
    assert on.rng_after == (probe.SEED, 1 + DECLARED.degradation("stream").count)
    assert (off.updates, on.updates) == (1, DECLARED.updates)
    arrays = _arrays()
    forward = stateful_reference.step(arrays, x, on.mask, probe.RATE, cotangent)
    bounds = stateful_reference.bounds(arrays, x, on.mask, probe.RATE, cotangent, forward)
    for step, updates in ((off, 1), (on, DECLARED.updates)):
        mean, var = stateful_reference.running(forward.mean, forward.var, probe.B, updates)
        _within(step.running_mean, mean, updates * bounds["mean"], f"mean after {updates}")
        _within(step.running_var, var, updates * bounds["var"], f"var after {updates}")
