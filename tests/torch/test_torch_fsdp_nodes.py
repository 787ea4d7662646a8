"""`torch_fsdp` on two torchrun nodes of this machine (`REMAT_SCALE_NODES=2`), and as a
cluster user runs it (docs/SCALE.md's commands, with 127.0.0.1 for the nodes' addresses).

Node 0 is the port's process (its ranks under `elastic_launch`, the c10d store, the
controller); node 1 is a `torchrun` the port starts. One rank per node: a world of 2.
The probes (`tests/fsdp_probe.py`) print who ran where; `tests/nodes.py` kills and stops
nodes, and checks every pid.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests import nodes
from tests.fsdp_probe import B, D, F
from tests.helpers import ROOT

FLOAT32 = 4
WORLD = 2
# REMAT_RANK_TIMEOUT in the hang test: the call's deadline, so the stop (once the victims
# have computed 0.5 CPU-s of it) must come well within it, on a loaded machine too.
TIMEOUT = 6


@pytest.fixture(scope="module")
def temporary(tmp_path_factory) -> Path:
    """The runs' TMPDIR, which they must leave as they found it."""
    return tmp_path_factory.mktemp("tmpdir")


@pytest.fixture(scope="module")
def runs(temporary) -> list[dict]:
    """Two two-node runs at once: each picks its own free ports."""
    return nodes.probes("tests.fsdp_probe", "evidence", 2, TMPDIR=str(temporary))


def test_two_runs_at_once_pick_ports_of_their_own(runs):
    first, second = (run["roster"]["ports"] for run in runs)
    assert first["controller"][1] != second["controller"][1]
    assert first["rendezvous"] != second["rendezvous"]
    assert runs[0]["True"][0]["kept_bytes"] == runs[1]["True"][0]["kept_bytes"]


def test_the_ranks_run_on_two_nodes_and_the_records_name_them(runs):
    run = runs[0]
    assert run["ranks"] == WORLD
    roster = run["roster"]
    (torchrun,) = roster["launchers"].values()  # node 1's, started by the port
    by_pid = {m["pid"]: m for m in roster["members"]}
    for checkpoint in ("True", "False"):
        records = run[checkpoint]
        assert [r["rank"] for r in records] == list(range(WORLD))
        assert {r["node"] for r in records} == {"node 0", "node 1"}
        for record in records:  # each record is the named rank's own, from its own process
            member = by_pid[record["pid"]]
            assert (member["rank"], member["node"]) == (record["rank"], record["node"])
    (remote,) = [m for m in roster["members"] if m["parent"] == torchrun]
    (local,) = [m for m in roster["members"] if m["parent"] != torchrun]
    assert remote["node"] != local["node"]
    assert remote["pid"] in roster["trees"][str(torchrun)]


def test_each_rank_keeps_its_rows_of_x_only_and_reruns_forward(runs):
    for on, off in zip(runs[0]["True"], runs[0]["False"], strict=True):
        assert on["kept_bytes"] == on["input_bytes"] == B // WORLD * D * FLOAT32
        assert off["kept_bytes"] - off["input_bytes"] == B // WORLD * F * FLOAT32
        assert on["backward_ops"] == {"addmm": 1, "relu": 1}
        assert off["backward_ops"] == {}
        assert on["backward_matmuls"] == off["backward_matmuls"] + 1


def test_the_mutant_is_rejected_naming_the_rank_and_its_node(runs):
    message = runs[0]["mutant_ranks"]
    assert "rank evidence, batch layout, 2 ranks, rank 0 on node 0 (pid" in message


def test_nothing_is_left_after_the_runs(runs, temporary):
    for run in runs:
        assert run["everything_alive_after"] == []
        assert nodes.alive(run["roster"]["everything"]) == []
    # torchrun's launcher left a torchelastic_* log directory there at every launch.
    assert sorted(p.name for p in temporary.iterdir()) == []


def test_a_killed_node_is_reported_by_name_and_nothing_is_left():
    seen = nodes.fault("tests.fsdp_probe", "torchrun 1", signal.SIGKILL)
    torchrun = seen["roster"]["launchers"]["torchrun 1"]
    (remote,) = [m for m in seen["roster"]["members"] if m["parent"] == torchrun]
    error = seen["error"]
    assert f"rank {remote['rank']} on {remote['node']} (pid {remote['pid']}" in error
    assert "its launcher, torchrun 1, was killed by SIGKILL" in error
    assert nodes.alive(seen["roster"]["everything"]) == []


def test_a_hung_node_is_reported_within_the_rank_timeout_and_nothing_is_left():
    seen = nodes.fault(
        "tests.fsdp_probe", "torchrun 1", signal.SIGSTOP, REMAT_RANK_TIMEOUT=str(TIMEOUT)
    )
    torchrun = seen["roster"]["launchers"]["torchrun 1"]
    (remote,) = [m for m in seen["roster"]["members"] if m["parent"] == torchrun]
    error = seen["error"]
    assert f"did not answer within {TIMEOUT} s" in error
    assert f"rank {remote['rank']} on {remote['node']} (pid {remote['pid']} on " in error
    assert error.split(f"(pid {remote['pid']} on ", 1)[1].split(";")[0].endswith("stopped")
    assert seen["seconds"] >= TIMEOUT  # it waited the timeout out (a bound above would be timing)
    assert nodes.alive(seen["roster"]["everything"]) == []


def test_a_controller_killed_by_sigkill_leaves_nothing_on_either_node(tmp_path):
    """The port's process dies without a word: every process it started ends by itself
    (its children watch their parent; node 1's ranks see their connection close)."""
    seen, seconds = nodes.kill_controller("tests.fsdp_probe", tmp_path)
    assert nodes.alive(seen["roster"]["everything"]) == [], seconds


def test_the_documented_cluster_commands_run_with_local_addresses(tmp_path):
    """docs/SCALE.md's commands for two hosts, as written, with node0 = 127.0.0.1 and free
    ports for its fixed ones: node 0 runs the suite (nodes.DOCUMENTED_RUN), node 1 a torchrun."""
    commands = nodes.documented("torch_fsdp on two nodes")
    rendezvous, controller = nodes.free_port(), nodes.free_port()

    def local(command: str) -> str:
        command = command.replace("node0:29400", f"127.0.0.1:{rendezvous}")
        return command.replace("node0:29500", f"127.0.0.1:{controller}")

    # Node 1's torchrun, the user's own, keeps its torchelastic_* log directory: here.
    env = nodes.shell_environment(TMPDIR=str(tmp_path))
    key = subprocess.run(
        ["bash", "-c", commands["every node, once"] + "; echo $REMAT_FSDP_AUTHKEY"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    env["REMAT_FSDP_AUTHKEY"] = key
    suite = subprocess.Popen(
        ["bash", "-c", local(commands["node 0"]) + nodes.DOCUMENTED_RUN], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    log = tmp_path / "node1.log"
    with open(log, "w") as out:
        node1 = subprocess.Popen(
            ["bash", "-c", local(commands["node 1"])], cwd=ROOT, env=env,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        out, err = suite.communicate(timeout=600)
        assert out.strip(), err[-3000:]
        report = json.loads(out)
        node1.wait(timeout=60)  # node 1 ends with the suite's ranks
        left = nodes.alive([node1.pid, *nodes.descendants(node1.pid)])
    finally:
        nodes.end_tree(suite.pid)
        nodes.end_tree(node1.pid)
    (port,) = report["ports"]
    assert port["state"] == "available", port["reason"]
    assert {o["property"]: o["status"] for o in port["outcomes"]} == {
        "b_forward": "pass",
        "e_evidence": "pass",
    }
    # Its own mutant, on the same two nodes; the other sharded port's is not this run's.
    mutants = {(m["name"], m["status"], m["killed_by"]) for m in report["mutants"]}
    assert mutants == {("fsdp_no_checkpoint", "killed", "e_evidence")}
    assert "FSDP over 2 gloo ranks on 2 nodes: rank 0 on node " in port["output"]
    assert "started here" not in port["output"]  # node 1 is the user's, not the port's
    assert node1.returncode == 0, log.read_text()[-2000:]
    assert left == []


def test_scale_md_shows_the_command_node_1_is_started_with():
    from implementations.stacks.torch.ranks import torchrun_command

    command = torchrun_command(2, "N", "127.0.0.1:P", "ID", "127.0.0.1:Q")
    shown = " ".join(["python", *command[1:]])
    text = " ".join(nodes.SCALE_DOC.read_text().split())
    assert f"(`{shown}`)" in text
