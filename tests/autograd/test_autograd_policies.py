"""autograd under remat policies: none and full only; the roles and matmuls its instrument shows."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("autograd")

from conformance.checking import policy_expectations
from implementations.policies import FULL, NONE, Policy
from implementations.stacks.autograd import hips_autograd as port_module
from tests import reference

PORT = port_module.HipsAutograd()


def _record(policy: Policy):
    params = reference.random_params(np.random.default_rng(0), 3, 4)
    return PORT.backward_record(params, np.ones(3, np.float32), checkpoint=policy)


def test_autograd_declares_none_and_full_only():
    assert set(PORT.policies) == {"none", "full"}
    assert set(PORT.inexpressible) == {"save_dots", "save_named", "offload_dots", "budget"}
    params = reference.random_params(np.random.default_rng(1), 3, 4)
    for spelling in ("save_dots", "save_named", "offload_dots", "budget(0.5)"):
        with pytest.raises(ValueError, match=r"checkpoint=.*cannot express"):
            PORT.forward(params, np.ones(3, np.float32), checkpoint=Policy.parse(spelling))


def test_the_instrument_names_every_kept_role():
    # dot's VJPs read x and a; the port's relu reads its output a: no h, no mask.
    record = _record(NONE)
    assert record.saved_roles == {"x", "a"}
    assert all(t.role for t in record.kept)
    assert record.backward_matmuls == 4
    full = _record(FULL)
    assert (full.saved_roles, full.backward_matmuls) == ({"x"}, 6)


def test_the_expectations_are_what_the_instrument_shows():
    for policy in (NONE, FULL):
        expected = policy_expectations.expected(PORT, policy, 3, 4)
        record = _record(policy)
        assert (record.saved_roles, record.backward_matmuls) == (
            expected.roles,
            expected.backward_matmuls,
        ), policy
