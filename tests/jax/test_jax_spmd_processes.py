"""`jax_spmd` on two `jax.distributed` processes of this machine (`REMAT_SCALE_NODES=2`), and
as a cluster user runs it (docs/SCALE.md's commands, with 127.0.0.1 for the hosts).

The port's process is the controller of two JAX processes, each with 2 forced host
devices (a mesh of 4): it sends every call to both. The probes (`tests/spmd_probe.py`,
in fresh interpreters: the processes are the port's children) print who ran where;
`tests/nodes.py` kills and stops processes, and checks every pid.
"""

from __future__ import annotations

import json
import signal
import subprocess

import numpy as np
import pytest

from tests import nodes
from tests.helpers import ROOT
from tests.spmd_probe import B, D, F

FLOAT32 = 4
DEVICES, PROCESSES = 4, 2
# REMAT_RANK_TIMEOUT in the hang test: the call's deadline, so the stop (once the victims
# have computed 0.5 CPU-s of it) must come well within it, on a loaded machine too.
TIMEOUT = 6


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    """Two two-process runs at once: each picks its own free ports."""
    return nodes.probes("tests.spmd_probe", "processes", 2)


@pytest.fixture(scope="module")
def one_process() -> dict:
    """The same contract calls on one process with 4 devices (`REMAT_SCALE_NODES=1`)."""
    (seen,) = nodes.probes("tests.spmd_probe", "values", 1, REMAT_SCALE_NODES="1")
    return seen["values"]


def test_two_runs_at_once_pick_ports_of_their_own(runs):
    first, second = (run["roster"]["ports"] for run in runs)
    assert first["controller"][1] != second["controller"][1]
    assert first["coordinator"] != second["coordinator"]
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


def test_the_mutant_is_rejected_naming_the_rank_and_its_process(runs):
    message = runs[0]["mutant_ranks"]
    assert "rank evidence, batch layout, 4 ranks, rank 0 on process 0 (pid" in message


def test_nothing_is_left_after_the_runs(runs):
    for run in runs:
        assert run["everything_alive_after"] == []
        assert nodes.alive(run["roster"]["everything"]) == []


def test_a_killed_process_is_reported_by_name_and_nothing_is_left():
    seen = nodes.fault("tests.spmd_probe", "process 1", signal.SIGKILL)
    pid = seen["roster"]["launchers"]["process 1"]
    assert f"process 1 (pid {pid} on " in seen["error"]
    assert "died (its connection closed: it was killed by SIGKILL)" in seen["error"]
    assert nodes.alive(seen["roster"]["everything"]) == []


def test_a_hung_process_is_reported_within_the_rank_timeout_and_nothing_is_left():
    seen = nodes.fault(
        "tests.spmd_probe", "process 1", signal.SIGSTOP, REMAT_RANK_TIMEOUT=str(TIMEOUT)
    )
    (member,) = [m for m in seen["roster"]["members"] if m["process"] == 1]
    assert f"did not answer within {TIMEOUT} s" in seen["error"]
    assert f"process 1 (pid {member['pid']} on {member['host']}), stopped" in seen["error"]
    assert seen["seconds"] >= TIMEOUT  # it waited the timeout out (a bound above would be timing)
    assert nodes.alive(seen["roster"]["everything"]) == []


def test_a_controller_killed_by_sigkill_leaves_nothing_on_either_node(tmp_path):
    """The port's process dies without a word: every process it started ends by itself
    (its children watch their parent; node 1's ranks see their connection close)."""
    seen, seconds = nodes.kill_controller("tests.spmd_probe", tmp_path)
    assert nodes.alive(seen["roster"]["everything"]) == [], seconds


def test_the_documented_cluster_commands_run_with_local_addresses(tmp_path):
    """docs/SCALE.md's commands for two hosts, as written, with host0 = 127.0.0.1 and free
    ports for its fixed ones: host 0 runs the suite (nodes.DOCUMENTED_RUN), host 1 JAX process 1."""
    commands = nodes.documented("jax_spmd on two hosts")
    coordinator, controller = nodes.free_port(), nodes.free_port()

    def local(command: str) -> str:
        command = command.replace("host0:29600", f"127.0.0.1:{coordinator}")
        return command.replace("host0:29700", f"127.0.0.1:{controller}")

    env = nodes.shell_environment()
    key = subprocess.run(
        ["bash", "-c", commands["every host, once"] + "; echo $REMAT_JAX_AUTHKEY"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    env["REMAT_JAX_AUTHKEY"] = key
    suite = subprocess.Popen(
        ["bash", "-c", local(commands["host 0"]) + nodes.DOCUMENTED_RUN], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    log = tmp_path / "host1.log"
    with open(log, "w") as out:
        host1 = subprocess.Popen(
            ["bash", "-c", local(commands["host 1"])], cwd=ROOT, env=env,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        out, err = suite.communicate(timeout=600)
        assert out.strip(), err[-3000:]
        report = json.loads(out)
        host1.wait(timeout=60)  # process 1 shuts down with process 0
        left = nodes.alive([host1.pid, *nodes.descendants(host1.pid)])
    finally:
        nodes.end_tree(suite.pid)
        nodes.end_tree(host1.pid)
    (port,) = report["ports"]
    assert port["state"] == "available", port["reason"]
    assert {o["property"]: o["status"] for o in port["outcomes"]} == {
        "b_forward": "pass",
        "e_evidence": "pass",
    }
    # Its own mutant, on the same two nodes; the other sharded port's is not this run's.
    mutants = {(m["name"], m["status"], m["killed_by"]) for m in report["mutants"]}
    assert mutants == {("spmd_no_checkpoint", "killed", "e_evidence")}
    assert "JAX SPMD over 4 devices in 2 processes: process 0 (pid" in port["output"]
    assert "started here: process 0 (pid" in port["output"]
    assert "process 1 (pid" not in port["output"].split("started here:")[1]  # the user's
    assert host1.returncode == 0, log.read_text()[-2000:]
    assert left == []
