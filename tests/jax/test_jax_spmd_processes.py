"""`jax_spmd` on two `jax.distributed` processes of this machine (`REMAT_SCALE_NODES=2`), and
as a cluster user runs it (docs/SCALE.md's commands, with 127.0.0.1 for the hosts).

The port's process is the controller of two JAX processes, each with 2 forced host
devices (a mesh of 4): it sends every call to both. The probes (`tests/support/spmd_probe.py`,
in fresh interpreters: the processes are the port's children) print who ran where;
`tests/support/nodes.py` kills and stops processes, and checks every pid. What `torch_fsdp`'s
nodes are held to as well is `tests/support/multinode_kit.py`'s; what is JAX's alone is here.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support import nodes
from tests.support.multinode_kit import TwoNodeKit
from tests.support.spmd_probe import B, D, F

#: It starts processes (`-m 'not subprocess'` leaves it out); the full tier's.
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(
        reason="27 s alone: two JAX processes per run, and a process killed or stopped"
    ),
]

FLOAT32 = 4
DEVICES, PROCESSES = 4, 2


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    """Two two-process runs at once: each picks its own free ports."""
    return nodes.probes("tests.support.spmd_probe", "processes", 2)


@pytest.fixture(scope="module")
def one_process() -> dict:
    """The same contract calls on one process with 4 devices (`REMAT_SCALE_NODES=1`)."""
    (seen,) = nodes.probes("tests.support.spmd_probe", "values", 1, REMAT_SCALE_NODES="1")
    return seen["values"]


class TestSpmdProcesses(TwoNodeKit):
    PROBE = "tests.support.spmd_probe"
    VICTIM = "process 1"
    RANKS, FIRST = DEVICES, "process 0"
    TITLE = "jax_spmd on two hosts"
    COMMANDS = ("every host, once", "host 0", "host 1")
    ADDRESSES = ("host0:29600", "host0:29700")  # the coordinator's, the controller's
    AUTHKEY = "REMAT_JAX_AUTHKEY"
    MUTANT = "spmd_no_checkpoint"

    def check_killed(self, seen):
        pid = seen["roster"]["launchers"]["process 1"]
        assert f"process 1 (pid {pid} on " in seen["error"]
        assert "died (its connection closed: it was killed by SIGKILL)" in seen["error"]

    def check_hung(self, seen):
        (member,) = [m for m in seen["roster"]["members"] if m["process"] == 1]
        assert f"process 1 (pid {member['pid']} on {member['host']}), stopped" in seen["error"]

    def check_documented_output(self, output):
        assert "JAX SPMD over 4 devices in 2 processes: process 0 (pid" in output
        assert "started here: process 0 (pid" in output
        assert "process 1 (pid" not in output.split("started here:")[1]  # the user's


def test_two_runs_at_once_compute_the_same_records(runs):
    assert runs[0]["batch_True"] == [
        {**record, "pid": mine["pid"]}
        for record, mine in zip(runs[1]["batch_True"], runs[0]["batch_True"], strict=True)
    ]


def test_each_device_is_measured_by_its_own_process_and_named(runs):
    run = runs[0]
    assert run["ranks"] == DEVICES
    pids = {m["node"]: m["pid"] for m in run["roster"]["members"]}
    assert sorted(pids) == ["process 0", "process 1"]
    assert len(set(pids.values())) == PROCESSES
    for key in ("batch_True", "batch_False", "feature_True", "feature_False"):
        records = run[key]
        assert [r["rank"] for r in records] == list(range(DEVICES))
        for record in records:  # devices 0, 1 on process 0; 2, 3 on process 1
            process = f"process {record['rank'] // (DEVICES // PROCESSES)}"
            assert (record["node"], record["pid"]) == (process, pids[process])


def test_with_the_checkpoint_each_device_keeps_its_shard_of_x_only(runs):
    run = runs[0]
    for record in run["batch_True"]:
        assert record["kept_bytes"] == record["input_bytes"] == B // DEVICES * D * FLOAT32
    for record in run["feature_True"]:
        assert record["kept_bytes"] == record["input_bytes"] == B * D * FLOAT32
    for layout, rows, width in (("batch", B // DEVICES, F), ("feature", B, F // DEVICES)):
        for on, off in zip(run[f"{layout}_True"], run[f"{layout}_False"], strict=True):
            assert off["kept_bytes"] - off["input_bytes"] >= rows * width * FLOAT32
            assert on["backward_ops"].get("dot_general") == 1
            assert off["backward_ops"] == {}
            assert on["backward_matmuls"] == off["backward_matmuls"] + 1


def test_the_results_are_the_one_process_port_s(runs, one_process):
    """Bitwise for the parameter gradients; the feature layout's cross-device sums (output,
    dx, the exercise) are added in another order by gloo: a few ulp."""
    two = runs[0]["values"]
    assert set(two) == set(one_process)
    for name, value in two.items():
        mine, theirs = np.asarray(value, np.float32), np.asarray(one_process[name], np.float32)
        if name in ("dw1", "db1", "dw2", "db2"):
            np.testing.assert_array_equal(mine, theirs, err_msg=name)
        else:
            np.testing.assert_array_max_ulp(mine, theirs, maxulp=4)
