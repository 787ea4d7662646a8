"""MLX under remat policies: none and full only (`tests.support.stack_kit.NoneAndFullKit`); the
roles
its instrument names (issue 21)."""

from __future__ import annotations

import pytest

pytest.importorskip("mlx")

from implementations.policies import FULL, NONE
from implementations.stacks.mlx import mlx as port_module
from tests.support.stack_kit import NoneAndFullKit, record_under

PORT = port_module.Mlx()


class TestMlxPolicies(NoneAndFullKit):
    PORT = PORT


def test_the_instrument_names_the_roles():
    # AddMM fuses the first layer: its output is h, which MLX's relu VJP reads (no mask).
    record = record_under(PORT, NONE)
    assert record.saved_roles == {"x", "h", "a"}
    assert all(t.role for t in record.kept)
    assert record_under(PORT, FULL).saved_roles == {"x"}
