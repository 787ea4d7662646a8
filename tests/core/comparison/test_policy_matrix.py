"""`compare`'s policy matrix: port x policy, from the ports' own instruments."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flax")

from rich.console import Console

import implementations
from conformance import mutants
from conformance.comparison import policy_matrix
from conformance.comparison.measure import PortComparison
from conformance.tables.kinds import compare_matrices
from conformance.tables.render import terminal
from tests.support import reference


def _cells(port) -> dict[str, policy_matrix.PolicyCell]:
    canonical = implementations.load("flax_linen")
    rng = np.random.default_rng(3)
    params = reference.random_params(rng, 3, 4)
    x, cotangent = rng.normal(size=3).astype(np.float32), rng.normal(size=4).astype(np.float32)
    cells = policy_matrix.measure(port, canonical, params, x, cotangent)
    return {cell.policy: cell for cell in cells}


def test_the_canonical_row():
    cells = _cells(implementations.load("flax_linen"))
    assert list(cells) == ["none", "full", "save_dots", "save_named", "offload_dots", "budget"]
    assert cells["save_named"].roles == ["h", "x"]
    assert cells["offload_dots"].memory["d1"] == "host"
    assert cells["full"].backward_matmuls == 5
    assert all(c.agrees and not c.expected for c in cells.values() if c.expressible)
    assert not cells["budget"].expressible
    assert "memory-budget" in cells["budget"].spelling


def test_a_port_that_drops_the_policy_is_shown_so():
    cells = _cells(mutants.load("drops_policy").port)
    # Its results agree (every policy computes the same function) but it saves the wrong set.
    assert cells["save_dots"].agrees
    assert cells["save_dots"].roles == ["x"]
    assert "expected {d1, x}" in cells["save_dots"].expected
    row = PortComparison("drops_policy", "available")
    row.policies = list(cells.values())
    console = Console(width=80, record=True)
    terminal.print_block(console, compare_matrices.policy_table([row]))
    text = console.export_text()
    assert "drops_policy" in text
    assert "as expected" in text  # none and full
    assert "saves {x}, expected {d1, x}" in compare_matrices.policy_verdict(cells["save_dots"])
