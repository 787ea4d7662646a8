"""MLX under remat policies: none and full only; the roles its instrument names (issue 21)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mlx")

from implementations.policies import FULL, NONE, Policy
from implementations.stacks.mlx import mlx as port_module
from tests import reference

PORT = port_module.Mlx()


def _record(policy: Policy):
    params = reference.random_params(np.random.default_rng(0), 3, 4)
    return PORT.backward_record(params, np.ones(3, np.float32), checkpoint=policy)


def test_mlx_declares_none_and_full_only():
    assert set(PORT.policies) == {"none", "full"}
    assert set(PORT.inexpressible) == {"save_dots", "save_named", "offload_dots", "budget"}


def test_the_instrument_names_the_roles():
    # AddMM fuses the first layer: its output is h, which MLX's relu VJP reads (no mask).
    record = _record(NONE)
    assert record.saved_roles == {"x", "h", "a"}
    assert all(t.role for t in record.kept)
    assert _record(FULL).saved_roles == {"x"}
