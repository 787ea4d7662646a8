"""TensorFlow under remat policies: the roles its instrument names, and the pinned
degradation of `tf.recompute_grad` (issue 21)."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from conformance.checking import policy_expectations
from implementations import manifests
from implementations.policies import FULL, NONE, Policy
from implementations.stacks.tensorflow import tensorflow as port_module
from tests.support import reference

PORT = port_module.TensorFlow()
D, F = 3, 4


def _record(policy: Policy):
    params = reference.random_params(np.random.default_rng(0), D, F)
    return PORT.backward_record(params, np.ones(D, np.float32), checkpoint=policy)


def test_tensorflow_declares_none_and_full_only():
    assert set(PORT.policies) == {"none", "full"}
    assert set(PORT.inexpressible) == {"save_dots", "save_named", "offload_dots", "budget"}
    with pytest.raises(ValueError, match="checkpoint=save_dots"):
        PORT.forward(reference.random_params(np.random.default_rng(0), D, F), np.ones(D),
                     checkpoint=Policy("save_dots"))  # fmt: skip


def test_the_instrument_names_the_roles():
    # Without remat the relu gradient reads its output a (no mask), with it only x is kept.
    assert _record(NONE).saved_roles == {"x", "a"}
    assert all(t.role for t in _record(NONE).kept)
    assert _record(FULL).saved_roles == {"x"}


def test_recompute_grad_reruns_both_matmuls_a_documented_degradation():
    # The second layer's matmul is not needed by the gradient (a is recomputed for dW2
    # and y is never read), but tf.recompute_grad reruns the whole region: both MatMuls.
    # Measured on the versions it names (the version sweep: docs/VERSIONS.md); this fails
    # the day TensorFlow prunes it. Its probe is what the sweep runs at every version.
    (documented,) = policy_expectations.degradations(PORT, "full")
    assert re.fullmatch(r"tensorflow \d+\.\d+(\.\d+)?( to \d+\.\d+\.\d+)?", documented.measured)
    assert _record(FULL).recomputed.get("MatMul") == 2
    holds, seen = manifests.resolve(documented.probe)()
    assert holds, seen
