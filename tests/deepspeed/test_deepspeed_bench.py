"""The DeepSpeed bench stack (its block and instrument through the generic driver) at small
sizes: residuals and matmuls against hand-derived counts, gradients against numpy
(`tests.support.stack_kit.BenchKit`), and `bench --json` kept clean.

A "unit" is one `(B, F)` float32 array; the analytic minimum is L units (the block inputs).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import ClassVar

import pytest

from implementations.measuring.driver import bench_module
from tests.support.bench_reference import B, F, small_data
from tests.support.helpers import ROOT
from tests.support.stack_kit import MODES, BenchKit

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess
deepspeed_stack = bench_module("implementations.stacks.deepspeed.block")


class TestDeepSpeedBench(BenchKit):
    stack = deepspeed_stack
    # Per block with no checkpoint, as torch: addmm 1 keeps x_l (dW1), relu keeps its output
    # a_l, which addmm 2 keeps too (one storage): 2 units. DeepSpeed's checkpoint keeps its
    # inputs on its node (x_l and the parameters, passed as arguments), nothing through
    # autograd: 1 unit.
    UNITS: ClassVar[dict] = {"none": lambda L: 2 * L, "full": lambda L: L}

    @staticmethod
    def grads(case):
        return [g.numpy() for g in case.call()[1]]  # the canonical layout: kernels (in, out)

    @staticmethod
    def between_steps(case):
        assert all(p.grad is None for p in case.params)  # the step leaves no .grad behind

    @staticmethod
    def check_kept(case, kept, mode, depth):
        if mode == "full":  # all of it read off the checkpoint nodes, where no hook sees it
            assert all("deepspeed_saved_tensors" in t.note for t in kept)
            params = [t for t in case.residuals() if t.origin == "parameter"]
            assert len(params) == 4 * depth  # every block's parameters, its arguments

    @staticmethod
    def save_mm():
        return deepspeed_stack.build("", "save-mm", small_data(1))


def test_measure_counts_matmuls_and_peak():
    depth = 2
    found = {m: deepspeed_stack.build("", m, small_data(depth)).measure() for m in MODES}
    # No checkpoint: as torch, 6 per block less block 0's dx. DeepSpeed's reentrant
    # checkpoint reruns the whole block, both addmms (torch's non-reentrant one stops after
    # the first): 8 per block less block 0's dx.
    matmuls = {m: s.matmuls for m, s in found.items()}
    assert matmuls == {"none": 6 * depth - 1, "full": 8 * depth - 1}
    for mode, static in found.items():
        assert static.temp_bytes is None
        # The returned gradients left out (as bench --schedules reads DeepSpeed's peak): at
        # least what the forward pass keeps for the backward pass.
        assert static.peak_bytes >= TestDeepSpeedBench.UNITS[mode](depth) * B * F * 4


def test_a_variant_other_than_eager_is_refused():
    with pytest.raises(ValueError, match="variant"):
        deepspeed_stack.build("compiled", "full", small_data(1))


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
