"""MindSpore's graph mode in `compare` and `bench` where mindspore cannot load: the compare
row reads "unavailable" with the reason, the bench stack is skipped with it, nothing crashes.

Each case runs in a fresh interpreter whose `PYTHONPATH` shadows mindspore with a package
that raises `ModuleNotFoundError` (`tests.helpers.without_frameworks`); the child processes
these start inherit its `sys.path`, so they see the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conformance.compare import mindspore_graph
from tests.helpers import ROOT, without_frameworks

COMPARE = textwrap.dedent(
    """
    import json
    import numpy as np
    from conformance.compare import mindspore_graph
    from implementations.stacks.numpy import canonical_params

    x, cotangent = np.ones(4, np.float32), np.ones(3, np.float32)
    row = mindspore_graph.compare(canonical_params(0, 4, 3), x, cotangent, 0, 1, None, None)
    print(json.dumps([row.name, row.state, row.reason, row.error]))
    """
)
BENCH = textwrap.dedent(
    """
    import json
    from conformance.bench import load_frameworks

    loaded, skipped = load_frameworks(["mindspore_graph"])
    print(json.dumps([sorted(loaded), skipped]))
    """
)


def _run_blocked(tmp_path, script: str):
    env = without_frameworks(tmp_path / "blocked", ["mindspore"])
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_compare_row_reads_unavailable_with_the_reason(tmp_path):
    name, state, reason, error = _run_blocked(tmp_path, COMPARE)
    assert (name, state, error) == ("mindspore_graph", "unavailable", "")
    assert "mindspore does not load" in reason
    assert "blocked for a test" in reason


def test_the_bench_stack_is_skipped_with_the_reason(tmp_path):
    loaded, skipped = _run_blocked(tmp_path, BENCH)
    assert loaded == []
    assert "blocked for a test" in skipped["mindspore_graph"]


def test_the_row_joins_a_comparison_of_mindspore_or_of_every_port():
    assert mindspore_graph.wanted(None)
    assert mindspore_graph.wanted(["mindspore"])
    assert mindspore_graph.wanted(["flax_linen", "mindspore_graph"])
    assert not mindspore_graph.wanted(["flax_linen", "torch"])
