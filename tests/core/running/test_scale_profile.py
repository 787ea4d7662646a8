"""The sharded ports through the suite, as `python -m conformance --profile scale` runs them.

The default run leaves `jax_spmd` and `torch_fsdp` out (their rank processes
and devices cost start-ups the default budget has no room for); the `scale`
profile runs them, every property, in worker processes of their own. This
is the README's test command's check that they pass, on one node and (once,
`REMAT_SCALE_NODES=2`) on two torchrun nodes and two JAX processes.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pytest

import implementations
from conformance.checking.properties import PROPERTIES
from conformance.mutants import MUTANTS
from conformance.running import profiles
from conformance.running.suite import RunConfig, plan, run_suite
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


def test_the_default_run_leaves_the_sharded_ports_and_their_mutants_out(tmp_path):
    registered = implementations.registered()
    default = profiles.default_ports(profiles.DEFAULT, registered)
    assert not set(default) & implementations.SHARDED
    assert set(profiles.default_ports(profiles.SCALE, registered)) == implementations.SHARDED
    jobs = plan(RunConfig(ports=tuple(default), mutants=True), tmp_path)
    hunted = {name for job in jobs for run in job.items for name in run.mutants}
    assert "fsdp_no_checkpoint" not in hunted
    assert "spmd_no_checkpoint" not in hunted
    scale = plan(RunConfig(ports=(), profile=profiles.SCALE, mutants=True), tmp_path)
    assert {name for job in scale for run in job.items for name in run.mutants} == {
        name for name, spec in MUTANTS.items() if spec.family in implementations.SHARDED
    }
    # A scale run of one sharded port hunts that port's mutants, and starts no other's ranks.
    for port in implementations.SHARDED:
        jobs = plan(RunConfig(ports=(port,), profile=profiles.SCALE, mutants=True), tmp_path)
        assert {job.group for job in jobs} == {port}
        assert {name for job in jobs for run in job.items for name in run.mutants} == {
            name for name, spec in MUTANTS.items() if spec.family == port
        }


#: The two-node runs: torchrun nodes and JAX processes, each a cluster on this machine.
TWO_NODE = pytest.mark.slow(reason="27 s alone: two torchrun nodes and two JAX processes")
#: The sharded ports at their default ranks (2 gloo ranks, 4 host devices) are the full tier's;
#: the fast tier runs the same code path on one rank and one device.
RANKS = {"one rank": {"REMAT_FSDP_RANKS": "1", "REMAT_SPMD_DEVICES": "1"}, "default ranks": {}}


@pytest.fixture(
    scope="module",
    params=[
        "one rank",
        pytest.param(
            "default ranks",
            marks=pytest.mark.slow(reason="17 s alone: 2 gloo ranks and 4 host devices per port"),
        ),
    ],
)
def scale_run(request):
    """The scale profile as a user runs it: the sharded ports and their mutants, hunted in
    the same workers (tests/core/running/test_mutants.py leaves the sharded mutants to this run)."""
    ports = tuple(sorted(implementations.SHARDED))
    before = dict(os.environ)
    os.environ.update(RANKS[request.param])  # the workers it starts read them
    try:
        return run_suite(RunConfig(ports=ports, profile=profiles.SCALE, mutants=True, jobs=2))
    finally:
        os.environ.clear()
        os.environ.update(before)


SHARDED_MUTANTS = sorted(n for n, s in MUTANTS.items() if s.family in implementations.SHARDED)


@pytest.mark.parametrize("name", SHARDED_MUTANTS)
def test_the_scale_run_rejects_the_sharded_mutant(scale_run, name):
    (result,) = [m for m in scale_run.mutants if m.name == name]
    if result.status == "unavailable":
        pytest.skip(result.message)
    assert result.status == "killed", f"{name} {result.status}: {result.message}"
    assert result.killed_by == MUTANTS[name].killed_by, result.message
    assert not result.message.startswith(f"[{name}] raised"), result.message


@pytest.mark.parametrize("name", sorted(implementations.SHARDED))
def test_the_sharded_port_passes_every_property(scale_run, name):
    (report,) = [port for port in scale_run.ports if port.name == name]
    if report.state == "unavailable":
        pytest.skip(report.reason)
    assert report.state == "available", report.reason
    statuses = {o.property: (o.status, o.message) for o in report.outcomes}
    assert set(statuses) == {p.key for p in PROPERTIES}
    assert {k: status for k, (status, _) in statuses.items()} == _expected(name), statuses


def _expected(name: str) -> dict[str, str]:
    # Every property passes; (k) is skipped, saying why, where the port declares no nesting,
    # and (l) where it offers no stateful block (no sharded port does).
    expressed = _declares_nesting(name)
    return {
        p.key: "skip" if (p.id == "k" and not expressed) or p.id == "l" else "pass"
        for p in PROPERTIES
    }


@functools.cache
def _declares_nesting(name: str) -> bool:
    """Whether the port's class declares a nested case, asked of a process of its own: a
    sharded port's module sets its device count before jax loads, so it cannot load here once
    another test has imported jax (its ranks stay unstarted either way)."""
    script = (
        "from implementations import manifests\n"
        "from conformance.checking.properties import k_composition as composition\n"
        f"_, entry = manifests.port({name!r})\n"
        "print(composition.not_expressible(manifests.resolve(entry.target)) is None)"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1] == "True"


#: docs/SCALE.md's command for the multi-process setting (3 examples per property here).
TWO_NODES = "REMAT_SCALE_NODES=2 REMAT_FSDP_RANKS=1 python -m conformance --profile scale"


@pytest.fixture(scope="module")
def two_node_run() -> dict:
    assert TWO_NODES in (ROOT / "docs" / "SCALE.md").read_text()
    *settings, _, _, _, _, _ = TWO_NODES.split()
    env = {**os.environ, **dict(s.split("=") for s in settings)}
    env.pop("XLA_FLAGS", None)
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "--profile", "scale", "--examples", "3", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout)


@TWO_NODE
@pytest.mark.parametrize("name", sorted(implementations.SHARDED))
def test_on_two_nodes_the_sharded_port_passes_every_property(two_node_run, name):
    (report,) = [port for port in two_node_run["ports"] if port["name"] == name]
    assert report["state"] == "available", report["reason"]
    statuses = {o["property"]: o["status"] for o in report["outcomes"]}
    # What each property that did not pass said, and what the port printed.
    why = {o["property"]: o["message"] for o in report["outcomes"] if o["status"] != "pass"}
    assert statuses == _expected(name), (why, report["output"][-3000:])


@TWO_NODE
def test_on_two_nodes_the_ports_say_where_each_rank_ran(two_node_run):
    output = {port["name"]: port["output"] for port in two_node_run["ports"]}
    fsdp = output["torch_fsdp"]
    assert "FSDP over 2 gloo ranks on 2 nodes: rank 0 on node " in fsdp
    assert {"rank 0 on node 0", "rank 1 on node 1"} <= set(_named(fsdp, "rank"))
    assert "started here: torchrun 1 (pid" in fsdp
    spmd = output["jax_spmd"]
    assert "JAX SPMD over 4 devices in 2 processes: process 0 (pid" in spmd
    assert "started here: process 0 (pid" in spmd
    assert ", process 1 (pid" in spmd


@TWO_NODE
def test_on_two_nodes_the_mutants_are_killed_by_the_evidence(two_node_run):
    assert {(m["name"], m["status"], m["killed_by"]) for m in two_node_run["mutants"]} == {
        ("fsdp_no_checkpoint", "killed", "e_evidence"),
        ("spmd_no_checkpoint", "killed", "e_evidence"),
    }


def _named(text: str, unit: str) -> list[str]:
    """`rank 0 on node 0` and the like, from a roster line."""
    import re

    return re.findall(rf"{unit} \d+ on node \d+", text)
