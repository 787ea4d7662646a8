"""Keras under remat policies: none and full only, and the pinned degradation of
`RematScope(mode="activations")`, which saves more than no remat at all (issue 21).

Run on Keras's JAX backend in a fresh interpreter (Keras keeps its first
backend), where the JAX instrument can read the residuals.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from conformance.checking import policy_expectations
from tests.helpers import ROOT

_PROBE = """
import json, os
os.environ["KERAS_BACKEND"] = "jax"
import jax, jax.numpy as jnp, keras
from implementations.stacks.jax import evidence

D, F = 3, 4


def kept(mode):
    # Dense(F, relu) -> Dense(F), made under RematScope(mode): "activations" wraps the
    # relu (the layer's activation) in its own remat.
    with keras.RematScope(mode=mode):
        model = keras.Sequential([keras.Input((D,)), keras.layers.Dense(F, activation="relu"),
                                  keras.layers.Dense(F)])
    weights = [jnp.asarray(w) for w in model.trainable_variables]

    def run(weights, x):
        y, _ = model.stateless_call(weights, [], x[None, :])
        return y[0]

    record = evidence.backward_record(run, (weights, jnp.ones(D)), ("parameter", "input"),
                                      jnp.ones(F))
    return {"bytes": record.saved_bytes, "roles": sorted(record.saved_roles),
            "kept": len(record.kept)}


print(json.dumps({"none": kept(None), "activations": kept("activations"),
                  "keras": keras.__version__}))
"""


def _probe() -> dict:
    for module in ("keras", "jax"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_remat_scope_activations_saves_more_than_no_remat_a_documented_degradation():
    seen = _probe()
    (documented,) = [d for d in policy_expectations.all_degradations() if d.family == "keras"]
    assert documented.measured == f"keras {seen['keras']}"
    # No remat keeps x, a and relu's mask; "activations" keeps x, h (the remat'd relu's
    # input) and a: a float vector where a boolean mask was. Fails the day Keras changes.
    assert seen["none"]["roles"] == ["a", "mask", "x"]
    assert seen["activations"]["roles"] == ["a", "h", "x"]
    assert seen["activations"]["bytes"] > seen["none"]["bytes"]
