"""`torch_fsdp` on two torchrun nodes of this machine (`REMAT_SCALE_NODES=2`), and as a
cluster user runs it (docs/SCALE.md's commands, with 127.0.0.1 for the nodes' addresses).

Node 0 is the port's process (its ranks under `elastic_launch`, the c10d store, the
controller); node 1 is a `torchrun` the port starts. One rank per node: a world of 2.
The probes (`tests/support/fsdp_probe.py`) print who ran where; `tests/support/nodes.py` kills and
stops
nodes, and checks every pid. What `jax_spmd`'s processes are held to as well is
`tests/support/multinode_kit.py`'s; what is torch's alone is here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import nodes
from tests.support.fsdp_probe import B, D, F
from tests.support.multinode_kit import TwoNodeKit

#: It starts processes (`-m 'not subprocess'` leaves it out); the full tier's.
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(
        reason="42 s alone: two torchrun nodes of gloo ranks per run, and a node killed or stopped"
    ),
]

FLOAT32 = 4
WORLD = 2


@pytest.fixture(scope="module")
def temporary(tmp_path_factory) -> Path:
    """The runs' TMPDIR, which they must leave as they found it."""
    return tmp_path_factory.mktemp("tmpdir")


@pytest.fixture(scope="module")
def runs(temporary) -> list[dict]:
    """Two two-node runs at once: each picks its own free ports."""
    return nodes.probes("tests.support.fsdp_probe", "evidence", 2, TMPDIR=str(temporary))


def _remote(seen: dict) -> dict:
    """The rank node 1's torchrun (the port's) runs."""
    torchrun = seen["roster"]["launchers"]["torchrun 1"]
    (remote,) = [m for m in seen["roster"]["members"] if m["parent"] == torchrun]
    return remote


class TestFsdpNodes(TwoNodeKit):
    PROBE = "tests.support.fsdp_probe"
    VICTIM = "torchrun 1"
    RANKS, FIRST = WORLD, "node 0"
    TITLE = "torch_fsdp on two nodes"
    COMMANDS = ("every node, once", "node 0", "node 1")
    ADDRESSES = ("node0:29400", "node0:29500")  # the rendezvous's, the controller's
    AUTHKEY = "REMAT_FSDP_AUTHKEY"
    MUTANT = "fsdp_no_checkpoint"

    def check_killed(self, seen):
        remote = _remote(seen)
        assert f"rank {remote['rank']} on {remote['node']} (pid {remote['pid']}" in seen["error"]
        assert "its launcher, torchrun 1, was killed by SIGKILL" in seen["error"]

    def check_hung(self, seen):
        remote, error = _remote(seen), seen["error"]
        assert f"rank {remote['rank']} on {remote['node']} (pid {remote['pid']} on " in error
        assert error.split(f"(pid {remote['pid']} on ", 1)[1].split(";")[0].endswith("stopped")

    def check_documented_output(self, output):
        assert "FSDP over 2 gloo ranks on 2 nodes: rank 0 on node " in output
        assert "started here" not in output  # node 1 is the user's, not the port's


def test_two_runs_at_once_compute_the_same_records(runs):
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


def test_the_runs_leave_their_tmpdir_as_they_found_it(runs, temporary):
    # torchrun's launcher left a torchelastic_* log directory there at every launch.
    assert sorted(p.name for p in temporary.iterdir()) == []


def test_scale_md_shows_the_command_node_1_is_started_with():
    from implementations.stacks.torch.ranks import torchrun_command

    command = torchrun_command(2, "N", "127.0.0.1:P", "ID", "127.0.0.1:Q")
    shown = " ".join(["python", *command[1:]])
    text = " ".join(nodes.SCALE_DOC.read_text().split())
    assert f"(`{shown}`)" in text
