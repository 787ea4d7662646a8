"""The DeepSpeed bench stack (`implementations.stacks.deepspeed.bench`) at small sizes:
residuals and matmuls against hand-derived counts, gradients against numpy, and `bench --json`
kept clean.

A "unit" is one `(B, F)` float32 array; the analytic minimum is L units (the block inputs).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from conformance.benchmark import policies
from conformance.benchmark.measure import Settings
from implementations.stacks.deepspeed import bench as deepspeed_stack
from tests.bench_reference import UNIT, B, F, assert_grads_match, kept_activations, small_data
from tests.helpers import ROOT

# Per block with no checkpoint, as torch: addmm 1 keeps x_l (dW1), relu keeps its output a_l,
# which addmm 2 keeps too (one storage): 2 units. DeepSpeed's checkpoint keeps its inputs on
# its node (x_l and the parameters, passed as arguments), nothing through autograd: 1 unit.
UNITS = {"none": lambda L: 2 * L, "full": lambda L: L}


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("mode", ["none", "full"])
def test_residuals_match_hand_derived_counts(mode, depth):
    case = deepspeed_stack.build("", mode, small_data(depth))
    kept = kept_activations(case, UNITS[mode](depth))
    if mode == "full":  # all of it read off the checkpoint nodes, where no hook sees it
        assert all("deepspeed_saved_tensors" in t.note for t in kept)
        params = [t for t in case.residuals() if t.origin == "parameter"]
        assert len(params) == 4 * depth  # every block's parameters, its arguments


def test_measure_counts_matmuls_and_peak():
    depth = 2
    found = {mode: deepspeed_stack.build("", mode, small_data(depth)).measure() for mode in UNITS}
    # No checkpoint: as torch, 6 per block less block 0's dx. DeepSpeed's reentrant
    # checkpoint reruns the whole block, both addmms (torch's non-reentrant one stops after
    # the first): 8 per block less block 0's dx.
    matmuls = {m: s.matmuls for m, s in found.items()}
    assert matmuls == {"none": 6 * depth - 1, "full": 8 * depth - 1}
    for static in found.values():
        assert static.temp_bytes is None
        # At least the gradients the step returns: 2 weights and 2 biases per block.
        assert static.peak_bytes is None or static.peak_bytes >= depth * (2 * F * F + 2 * F) * 4


@pytest.mark.parametrize("mode", ["none", "full"])
def test_gradients_match_numpy(mode):
    data = small_data(3)
    case = deepspeed_stack.build("", mode, data)
    grads = case._grads(case.stack)
    # torch's weights are (out, in): their gradients, transposed, are the canonical kernels'.
    assert_grads_match([g.numpy().T if g.ndim == 2 else g.numpy() for g in grads], data)
    assert all(p.grad is None for p in case.flat)  # the step leaves no .grad behind


def test_a_checkpointed_step_equals_the_plain_one_bit_for_bit():
    data = small_data(2)
    grads = {}
    for mode in ("none", "full"):
        case = deepspeed_stack.build("", mode, data)
        grads[mode] = case._grads(case.stack)
    for a, b in zip(grads["none"], grads["full"], strict=True):
        assert torch.equal(a, b)


def test_no_save_mm_and_the_policy_bench_runs_none_and_full():
    assert deepspeed_stack.configurations() == [("", "none"), ("", "full")]
    with pytest.raises(ValueError, match="save-mm"):
        deepspeed_stack.stack_fn("save-mm")
    with pytest.raises(ValueError, match="unknown variant"):
        deepspeed_stack.build("compiled", "full", small_data(1))
    assert deepspeed_stack.POLICIES == ("none", "full")
    results, failed = policies.run(
        Settings(depths=(2,), batch=B, features=F, repeats=1, max_repeats=1),
        {"deepspeed": deepspeed_stack},
    )
    assert failed == {}
    assert [(r.policy, r.saved_bytes) for r in results] == [("none", 4 * UNIT), ("full", 2 * UNIT)]


def test_bench_json_is_the_report_alone(tmp_path):
    # DeepSpeed logs to stdout when it is imported: the bench sends that to stderr.
    argv = ["bench", "--framework", "deepspeed", "--depths", "1", "--batch", str(B)]
    argv += ["--features", str(F), "--repeats", "1", "--max-repeats", "1", "--json"]
    result = subprocess.run(
        [sys.executable, "-m", "conformance", *argv, "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert {r["framework"] for r in data["results"]} == {"deepspeed"}
    assert data["versions"]["deepspeed"]["deepspeed"] == deepspeed_stack.versions()["deepspeed"]
