"""Extra rows of compare (a framework's process-wide mode, declared by its manifest): where the
framework cannot load, the compare row reads "unavailable" with the reason, an isolated bench
stack is skipped with it, and nothing crashes.

Each case runs in a fresh interpreter whose `PYTHONPATH` shadows the framework with a package
that raises `ModuleNotFoundError` (`tests.support.helpers.without_frameworks`); the child processes
these start inherit its `sys.path`, so they see the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conformance.comparison import rows
from implementations import manifests
from tests.support.helpers import ROOT, without_frameworks

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

ROWS = rows.declared()
#: Each extra row, with the top-level module its framework needs.
BLOCKABLE = {name: manifest.ports[0].modules[0] for name, (manifest, _) in ROWS.items()}

COMPARE = textwrap.dedent(
    """
    import json, sys
    from conformance.comparison import lanes, measure
    from implementations.stacks.numpy import canonical_params
    import numpy as np

    name = sys.argv[1]
    params = canonical_params(0, 4, 3)
    x, cotangent = np.ones(4, np.float32), np.ones(3, np.float32)
    (lane,) = measure.row_lanes([name], (params, x, cotangent, 0, 1, None, None))
    try:
        lanes.run_lanes([lane], 1, lambda: None)  # its process: the framework fails to load
    finally:
        lanes.end_all([lane])
    row = lane.rows[name]
    print(json.dumps([row.name, row.state, row.reason, row.error]))
    """
)
BENCH = textwrap.dedent(
    """
    import json, sys
    from conformance.benchmark import ISOLATED, load_frameworks

    loaded, skipped = load_frameworks(sorted(ISOLATED))
    print(json.dumps([sorted(loaded), skipped]))
    """
)


def _run_blocked(tmp_path, script: str, module: str, *args: str):
    env = without_frameworks(tmp_path / "blocked", [module])
    done = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(ROWS))
def test_a_row_without_its_framework_is_unavailable_without_a_process(name, monkeypatch):
    import importlib.util

    module = BLOCKABLE[name]
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda m, *a: None if m == module else real(m, *a)
    )
    assert f"{module} is not installed" in rows.missing(name)
    assert "pip install" in rows.missing(name)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_a_row_whose_framework_fails_to_load_reads_unavailable_with_the_reason(tmp_path, name):
    found, state, reason, error = _run_blocked(tmp_path, COMPARE, BLOCKABLE[name], name)
    assert (found, state, error) == (name, "unavailable", "")
    assert "blocked for a test" in reason


def test_an_isolated_bench_stack_is_skipped_with_the_reason(tmp_path):
    from conformance.benchmark import ISOLATED

    assert ISOLATED, "no isolated bench stack to test"
    modules = {m.ports[0].modules[0] for m in manifests.manifests() for e in m.bench if e.isolated}
    (module,) = modules
    loaded, skipped = _run_blocked(tmp_path, BENCH, module)
    assert loaded == []
    assert set(skipped) == set(ISOLATED)
    assert all("blocked for a test" in reason for reason in skipped.values())


def test_a_row_joins_a_comparison_of_its_stack_or_of_every_port():
    for name, (_, row) in ROWS.items():
        assert row in rows.wanted(None)
        assert row in rows.wanted([name])
        for other in row.wanted_by:
            assert row in rows.wanted(["flax_linen", other])
        assert row not in rows.wanted(["flax_linen"])
