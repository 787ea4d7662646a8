"""The tfjs bench stack (`python -m conformance bench --framework tfjs`): a tiny sweep in Node.

Expected bytes and matmul counts are worked out by hand from the shapes and from what tfjs's
gradients keep (MatMul: both inputs; Add: both inputs, for their shapes; Relu: its input;
a tf.customGrad region: what it `save`s), never read off the code under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conformance import benchmark as bench
from conformance import cli
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="needs Node.js and npm: the tfjs bench"),
]

B, F = 8, 4
UNIT = B * F * 4  # one (B, F) float32 tensor, in bytes
# Per block: (saved (B, F) tensors, matmuls for the first block and for each later one).
# none: x, x@W1 (Add), h (Relu), relu(h) (MatMul), relu(h)@W2 (Add); 2 forward matmuls, and
#   backward dW2, da, dW1, plus dx but in the first block (x wants no gradient).
# full: the block input only (the region saves x and the weights); 2 forward, 1 recomputed,
#   and mlp.js's hand-written VJP computes dW2, da, dW1 and dx in every block.
# save-mm: x (the outer MatMul) and x@W1 (the region's input); 2 forward, the region's
#   dW2 and dz, the outer dW1, plus dx but in the first block. Nothing is recomputed by matmul.
EXPECTED = {
    "none": (5, 5, 6),
    "full": (1, 7, 7),
    "save-mm": (2, 5, 6),
}


@pytest.fixture(scope="module")
def tfjs_stack(node):
    loaded, skipped = bench.load_frameworks(["tfjs"])
    if "tfjs" in skipped:
        pytest.fail(f"node is installed, yet the tfjs bench is skipped: {skipped['tfjs']}")
    return loaded["tfjs"]


@pytest.fixture(scope="module")
def sweep(tfjs_stack, tmp_path_factory):
    out = tmp_path_factory.mktemp("tfjs_bench")
    argv = ["bench", "--framework", "tfjs", "--out", str(out), "--depths", "1", "2"]
    argv += ["--batch", str(B), "--features", str(F), "--repeats", "3", "--max-repeats", "3"]
    args = cli.parser().parse_args(argv)
    assert cli.COMMANDS["bench"].run(args) == 0
    return json.loads((out / "bench.json").read_text())


def _row(data, mode, depth):
    (row,) = [r for r in data["results"] if r["mode"] == mode and r["depth"] == depth]
    return row


def test_tfjs_is_a_bench_framework_that_runs_only_when_named():
    assert "tfjs" in bench.FRAMEWORKS
    assert "tfjs" not in bench.DEFAULT_FRAMEWORKS
    assert set(bench.DEFAULT_FRAMEWORKS) == set(bench.FRAMEWORKS) - {"tfjs"}


def test_a_tiny_tfjs_sweep_has_every_mode_and_depth(sweep):
    assert sweep["skipped"] == {}
    assert sweep["versions"]["tfjs"]["@tensorflow/tfjs"] == "4.22.0"
    rows = {(r["mode"], r["depth"]) for r in sweep["results"]}
    assert rows == {(m, d) for m in ("none", "full", "save-mm") for d in (1, 2)}
    for row in sweep["results"]:
        assert row["framework"] == "tfjs"
        assert len(row["step_seconds"]) == row["n"] == 3
        assert all(t > 0 for t in row["step_seconds"])


@pytest.mark.parametrize("depth", [1, 2])
def test_the_checkpoint_saves_the_analytic_minimum_and_less_than_none(sweep, depth):
    full, none = _row(sweep, "full", depth), _row(sweep, "none", depth)
    assert full["analytic_minimum"] == depth * UNIT
    assert full["saved_bytes"] == depth * UNIT  # exactly the block inputs
    assert full["saved_count"] == depth
    assert none["saved_bytes"] == 5 * depth * UNIT
    assert full["saved_bytes"] < none["saved_bytes"]


@pytest.mark.parametrize("mode", ["none", "full", "save-mm"])
def test_saved_bytes_and_matmuls_are_those_worked_out_by_hand(sweep, mode):
    per_block, first, later = EXPECTED[mode]
    for depth in (1, 2):
        row = _row(sweep, mode, depth)
        assert row["saved_bytes"] == per_block * depth * UNIT, (mode, depth)
        assert row["matmuls"] == first + later * (depth - 1), (mode, depth)
        assert row["peak_bytes"] is None  # not observable: tf.tidy frees at its end only


def test_without_node_tfjs_is_skipped_with_the_reason(tmp_path):
    # A PATH without node: the bench lists tfjs as skipped, and the default bench is unaffected.
    code = textwrap.dedent(
        """
        import os
        os.environ["PATH"] = os.environ["EMPTY_PATH"]
        from conformance import benchmark as bench
        loaded, skipped = bench.load_frameworks(["tfjs"])
        print(sorted(loaded), "|", skipped["tfjs"])
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "EMPTY_PATH": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    loaded, reason = result.stdout.strip().split(" | ")
    assert loaded == "[]"
    assert "not installed" in reason
    assert "Node.js" in reason


def test_without_npm_and_no_install_tfjs_is_skipped_with_the_reason(node, tmp_path):
    # Node alone on PATH, an empty cache: tfjs cannot be installed, and the bench says why.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)
    code = textwrap.dedent(
        """
        from conformance import benchmark as bench
        loaded, skipped = bench.load_frameworks(["tfjs"])
        print(sorted(loaded), "|", skipped["tfjs"])
        """
    )
    environment = {**os.environ, "PATH": str(bin_dir), "REMAT_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    loaded, reason = result.stdout.strip().split(" | ")
    assert loaded == "[]"
    assert "tfjs cannot run" in reason
    assert "npm is not on PATH" in reason


def test_bench_policies_runs_the_policies_its_port_expresses(tfjs_stack, tmp_path):
    """`bench --policies` takes the process port's stack: none and full, and the rest said
    inexpressible with tfjs's reasons (no manifest field keeps it out any more)."""
    argv = ["bench", "--policies", "--framework", "tfjs", "--out", str(tmp_path)]
    argv += ["--batch", str(B), "--features", str(F), "--depths", "1"]
    argv += ["--repeats", "3", "--max-repeats", "3"]
    args = cli.parser().parse_args(argv)
    assert cli.COMMANDS["bench"].run(args) == 0
    found = list(tmp_path.glob("*.json"))
    assert found, list(tmp_path.iterdir())
    data = json.loads(found[0].read_text())
    text = json.dumps(data)
    assert "tfjs" in text
    assert "tfjs has no remat policy API" in text
