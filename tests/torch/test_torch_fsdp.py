"""The FSDP2 port (`torch_fsdp`): per-rank evidence and owned rank processes.

Each test runs `tests/support/fsdp_probe.py` in a fresh interpreter: it starts the
ranks through the port (torch's `elastic_launch`), and the tests judge what
it saw. Expected byte counts are computed here from the shapes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.fsdp_probe import B, D, F
from tests.support.helpers import ROOT
from tests.support.nodes import alive, still_alive

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

FLOAT32 = 4
RANKS = 2
#: The faults wait on purpose: for a rank's timeout, or for the ranks to see their parent go.
FAULT = pytest.mark.slow(reason="14 s alone: three faults, each waits for a timeout or a death")


def probe(mode: str, **env: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.fsdp_probe", mode],
        cwd=ROOT, env={**os.environ, "REMAT_FSDP_RANKS": str(RANKS), **env},
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def temporary(tmp_path_factory) -> Path:
    """The evidence run's TMPDIR, which it must leave as it found it."""
    return tmp_path_factory.mktemp("tmpdir")


@pytest.fixture(scope="module")
def evidence(temporary) -> dict:
    return probe("evidence", TMPDIR=str(temporary))


def test_the_ranks_leave_nothing_in_the_temporary_directory(evidence, temporary):
    # torch's launcher left a torchelastic_* log directory there at every launch.
    assert sorted(p.name for p in temporary.iterdir()) == []


def test_with_the_checkpoint_each_rank_keeps_its_rows_of_x_only(evidence):
    assert evidence["ranks"] == RANKS
    records = evidence["True"]
    assert [r["rank"] for r in records] == list(range(RANKS))
    for record in records:
        assert record["kept_bytes"] == record["input_bytes"] == B // RANKS * D * FLOAT32


def test_without_the_checkpoint_each_rank_keeps_the_relu_output(evidence):
    for record in evidence["False"]:
        assert record["kept_bytes"] - record["input_bytes"] == B // RANKS * F * FLOAT32
        assert record["backward_ops"] == {}


def test_rank_zero_names_the_roles_it_keeps_per_policy(evidence):
    # Written from torch's autograd formulas: mv/addmm's backward reads its input (x, then
    # a), relu's its output a; 4 matmuls (dW2, da, dW1, dx), and under the checkpoint
    # torch.utils.checkpoint keeps x alone and reruns fc1's matmul: 5.
    seen = evidence
    assert seen["none"] == {"roles": ["a", "x"], "backward_matmuls": 4}
    assert seen["full"] == {"roles": ["x"], "backward_matmuls": 5}


def test_the_port_declares_none_and_full_and_refuses_the_rest():
    from implementations.policies import POLICY_NAMES, Policy
    from implementations.stacks.torch.torch_fsdp import TorchFsdp

    assert set(TorchFsdp.policies) == {"none", "full"}
    assert set(TorchFsdp.inexpressible) == set(POLICY_NAMES) - {"none", "full"}
    port = TorchFsdp()  # no ranks start until it is asked something
    assert port.checkpointed(Policy("full")) is True
    assert port.checkpointed(False) is False
    with pytest.raises(ValueError, match=r"save_dots.*cannot express"):
        port.checkpointed(Policy("save_dots"))


def test_backward_reruns_the_forward_ops_on_every_rank(evidence):
    for on, off in zip(evidence["True"], evidence["False"], strict=True):
        assert on["backward_ops"] == {"addmm": 1, "relu": 1}
        assert on["backward_matmuls"] == off["backward_matmuls"] + 1


def test_the_ranks_stop_with_the_port(evidence):
    assert len(evidence["pids"]) == RANKS
    assert evidence["alive_after"] == []


def _controller_killed(temporary: Path) -> tuple[list[int], list[int]]:
    """SIGKILL the port's process (the probe's `serve`) once its ranks are up: the ranks' pids,
    and those still alive after waiting for them to end by themselves."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fsdp_probe", "serve"],
        cwd=ROOT, env={**os.environ, "REMAT_FSDP_RANKS": str(RANKS), "TMPDIR": str(temporary)},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    pids: list[int] = []
    try:
        pids = json.loads(process.stdout.readline())["pids"]
        up = alive(pids)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    return up, still_alive(pids)


@pytest.fixture(scope="module")
def faults(tmp_path_factory) -> dict:
    """The three faults, each a run of its own, started at once: each mostly waits (for a
    timeout, or for the ranks to see their parent go), and one after another the xdist worker
    sat idle through those waits. Each test reads its own fault's result."""
    with ThreadPoolExecutor(3) as pool:  # it returns once each has ended
        return {
            "killed": pool.submit(probe, "crash", REMAT_FSDP_CRASH_RANK="1"),
            # The ranks are up before the call, so its timeout is the sleep's alone: any will do.
            "hung": pool.submit(probe, "hang", REMAT_RANK_TIMEOUT="2"),
            "controller": pool.submit(_controller_killed, tmp_path_factory.mktemp("controller")),
        }


@FAULT
def test_a_killed_rank_is_reported_by_number_and_no_rank_is_left(faults):
    seen = faults["killed"].result()
    assert "rank 1" in seen["error"]
    assert "SIGKILL" in seen["error"]
    assert seen["alive_after"] == []


@FAULT
def test_a_hung_rank_is_reported_after_the_rank_timeout_and_no_rank_is_left(faults):
    seen = faults["hung"].result()
    assert "did not answer within 2 s" in seen["error"]
    assert "ranks 0, 1" in seen["error"]
    assert seen["alive_after"] == []


@FAULT
def test_a_controller_killed_by_sigkill_leaves_no_rank(faults):
    """The worker dies without a word (SIGKILL): each rank sees its parent go, and exits.
    (Its log directory, which it cannot remove, is left in the test's TMPDIR.)"""
    up, left = faults["controller"].result()
    assert len(up) == RANKS
    assert left == []
