"""autograd under remat policies: none and full only (`tests.support.stack_kit.NoneAndFullKit`); the
roles and matmuls its instrument shows."""

from __future__ import annotations

import pytest

pytest.importorskip("autograd")

from conformance.checking.properties import j_policies
from implementations.policies import FULL, NONE
from implementations.stacks.autograd import hips_autograd as port_module
from tests.support.stack_kit import NoneAndFullKit, record_under

PORT = port_module.HipsAutograd()


class TestAutogradPolicies(NoneAndFullKit):
    PORT = PORT


def test_the_instrument_names_every_kept_role():
    # dot's VJPs read x and a; the port's relu reads its output a: no h, no mask.
    record = record_under(PORT, NONE)
    assert record.saved_roles == {"x", "a"}
    assert all(t.role for t in record.kept)
    assert record.backward_matmuls == 4
    full = record_under(PORT, FULL)
    assert (full.saved_roles, full.backward_matmuls) == ({"x"}, 6)


def test_the_expectations_are_what_the_instrument_shows():
    for policy in (NONE, FULL):
        expected = j_policies.expected(PORT, policy, 3, 4)
        record = record_under(PORT, policy)
        assert (record.saved_roles, record.backward_matmuls) == (
            expected.roles,
            expected.backward_matmuls,
        ), policy
