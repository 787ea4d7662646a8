"""The tests both sharded ports share on two nodes of this machine, written once: `torch_fsdp`
(nodes: torchrun launchers, one rank each) and `jax_spmd` (nodes: JAX processes).

`TwoNodeKit` is a kit in the way of `tests/support/stack_kit.py`: a stack's file declares
`class TestXxx(TwoNodeKit)` with its specifics (its probe, the node a fault strikes, its
documented commands, what its messages name) and a module-scoped fixture `runs` (two probe
runs at once); pytest collects the kit's tests there. The probes and the helpers that run,
fault and check them are `tests/support/nodes.py`'s.
"""

from __future__ import annotations

import json
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

import pytest

from tests.support import nodes
from tests.support.helpers import ROOT

#: REMAT_RANK_TIMEOUT in the hang test: the call's deadline, so the stop (once the victims
#: have computed 0.5 CPU-s of it) must come well within it, on a loaded machine too.
TIMEOUT = 6


def hung(probe: str, victim: str) -> dict:
    """`nodes.fault` with SIGSTOP, under a call deadline of TIMEOUT seconds."""
    return nodes.fault(probe, victim, signal.SIGSTOP, REMAT_RANK_TIMEOUT=str(TIMEOUT))


class TwoNodeKit:
    """Two-node runs of a sharded port: ports of their own, faults named, nothing left.

    A subclass sets `PROBE` (the probe's module), `VICTIM` (the launcher a fault strikes, as
    the roster names it), `RANKS` and `FIRST` (how many ranks the mutant's message counts, and
    how it names rank 0's node), the documented commands (`TITLE`, `COMMANDS`, `ADDRESSES`,
    `AUTHKEY`, `MUTANT`), and defines the checks of what its messages name
    (`check_killed`, `check_hung`, `check_documented_output`).
    """

    PROBE: ClassVar[str]
    VICTIM: ClassVar[str]
    RANKS: ClassVar[int]
    FIRST: ClassVar[str]
    #: docs/SCALE.md's shell block (its first comment) and its commands' keys: the one every
    #: host runs once, the first host's (which runs the suite), the second host's.
    TITLE: ClassVar[str]
    COMMANDS: ClassVar[tuple[str, str, str]]
    #: The fixed addresses the documented commands use, each given a free local port here.
    ADDRESSES: ClassVar[tuple[str, ...]]
    #: The variable the command run once exports, the key every host shares.
    AUTHKEY: ClassVar[str]
    #: The port's own mutant, which the documented run kills by (e).
    MUTANT: ClassVar[str]

    def check_killed(self, seen: dict) -> None:
        """What the error names once `VICTIM` and its processes were SIGKILLed."""
        raise NotImplementedError

    def check_hung(self, seen: dict) -> None:
        """What the error names once `VICTIM` and its processes were SIGSTOPped."""
        raise NotImplementedError

    def check_documented_output(self, output: str) -> None:
        """What the documented run's port says of where it ran."""
        raise NotImplementedError

    def test_two_runs_at_once_pick_ports_of_their_own(self, runs):
        first, second = (run["roster"]["ports"] for run in runs)
        assert set(first) == set(second), (first, second)
        assert len(first) >= 2, first  # the controller's, and the store's or coordinator's
        for name in first:
            assert first[name] != second[name], name

    def test_the_mutant_is_rejected_naming_the_rank_and_its_node(self, runs):
        message = runs[0]["mutant_ranks"]
        expected = f"rank evidence, batch layout, {self.RANKS} ranks, rank 0 on {self.FIRST} (pid"
        assert expected in message, message

    def test_nothing_is_left_after_the_runs(self, runs):
        for run in runs:
            assert run["everything_alive_after"] == []
            assert nodes.alive(run["roster"]["everything"]) == []

    @pytest.fixture(scope="class")
    @classmethod
    def faults(cls, tmp_path_factory) -> dict:
        """The three faults, each a run of its own, started at once: each mostly waits (for a
        timeout, or for processes to see their parent go), and one after another the xdist
        worker sat idle through those waits. Each test reads its own fault's result (a
        fault that raised fails its test alone)."""
        with ThreadPoolExecutor(3) as pool:  # it returns once each has ended
            return {
                "killed": pool.submit(nodes.fault, cls.PROBE, cls.VICTIM, signal.SIGKILL),
                "hung": pool.submit(hung, cls.PROBE, cls.VICTIM),
                "controller": pool.submit(
                    nodes.kill_controller, cls.PROBE, tmp_path_factory.mktemp("controller")
                ),
            }

    def test_a_killed_node_is_reported_by_name_and_nothing_is_left(self, faults):
        seen = faults["killed"].result()
        self.check_killed(seen)
        assert nodes.alive(seen["roster"]["everything"]) == []

    def test_a_hung_node_is_reported_within_the_rank_timeout_and_nothing_is_left(self, faults):
        seen = faults["hung"].result()
        assert f"did not answer within {TIMEOUT} s" in seen["error"], seen["error"]
        self.check_hung(seen)
        assert seen["seconds"] >= TIMEOUT  # it waited the timeout out (a bound above: timing)
        assert nodes.alive(seen["roster"]["everything"]) == []

    def test_a_controller_killed_by_sigkill_leaves_nothing_on_either_node(self, faults):
        """The port's process dies without a word: every process it started ends by itself
        (its children watch their parent; node 1's see their connection close)."""
        seen, seconds = faults["controller"].result()
        assert nodes.alive(seen["roster"]["everything"]) == [], seconds

    def test_the_documented_cluster_commands_run_with_local_addresses(self, tmp_path):
        """docs/SCALE.md's commands for two hosts, as written, with 127.0.0.1 for the first
        and free ports for its fixed ones: the first runs the suite (nodes.DOCUMENTED_RUN),
        the second its node, as the user starts it."""
        once, first, second = self.COMMANDS
        commands = nodes.documented(self.TITLE)
        local = {address: f"127.0.0.1:{nodes.free_port()}" for address in self.ADDRESSES}
        for address in self.ADDRESSES:
            assert address in commands[first], address
            assert address in commands[second], address

        def here(command: str) -> str:
            for address, free in local.items():
                command = command.replace(address, free)
            return command

        # A launcher the user starts keeps what it writes in TMPDIR (torchrun's
        # torchelastic_* log directory): here.
        env = nodes.shell_environment(TMPDIR=str(tmp_path))
        env[self.AUTHKEY] = subprocess.run(
            ["bash", "-c", f"{commands[once]}; echo ${self.AUTHKEY}"],
            env=env, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        suite = subprocess.Popen(
            ["bash", "-c", here(commands[first]) + nodes.DOCUMENTED_RUN], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        log = tmp_path / "second.log"
        with open(log, "w") as out:
            other = subprocess.Popen(
                ["bash", "-c", here(commands[second])], cwd=ROOT, env=env,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            out, err = suite.communicate(timeout=600)
            assert out.strip(), err[-3000:]
            report = json.loads(out)
            other.wait(timeout=60)  # the second host's node ends with the suite's
            left = nodes.alive([other.pid, *nodes.descendants(other.pid)])
        finally:
            nodes.end_tree(suite.pid)
            nodes.end_tree(other.pid)
        (port,) = report["ports"]
        assert port["state"] == "available", port["reason"]
        assert {o["property"]: o["status"] for o in port["outcomes"]} == {
            "b_forward": "pass",
            "e_evidence": "pass",
        }
        # Its own mutant, on the same two nodes; the other sharded port's is not this run's.
        mutants = {(m["name"], m["status"], m["killed_by"]) for m in report["mutants"]}
        assert mutants == {(self.MUTANT, "killed", "e_evidence")}
        self.check_documented_output(port["output"])
        assert other.returncode == 0, log.read_text()[-2000:]
        assert left == []
