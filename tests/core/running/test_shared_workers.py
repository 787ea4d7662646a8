"""One worker per framework: the ports of one framework share a worker, and a port that changes
process-wide state there cannot change another port's verdict.

A port from another package opts in to its framework's worker (the entry-point group
`remat_conformance.workers`). Here one does, and changes what a JAX port depends on once its
forward pass has run: x64 on, and `jax.nn.relu` swapped for a leaky one of its own. The
built-in `jax_checkpoint` runs after it in the same worker: the worker reports the change and
the parent gives `jax_checkpoint` a fresh worker, so its verdict is its own. The control runs
the same two ports in one process (`--in-process`, which has no isolation): there the flip
reaches `jax_checkpoint`, which fails, so the flip is real and the guard is what stops it.

A mutant is hunted in its family's worker too (the pytest plugin hunts every one in the
worker that checked its framework's ports): one that changes process-wide state is reported
the same way, so the next request gets a fresh worker.
"""

from __future__ import annotations

import json
import types

import pytest

from conformance.running import isolation, process_state
from conformance.running.suite import SHARED_WORKERS, worker_group
from conformance.running.worker import Settings
from tests.support.helpers import make_distribution, run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

FLIPPER = '''
"""A JAX port that changes process-wide state after its first forward pass."""

import jax

from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint


def leaky_relu(x):  # a monkeypatch this port wanted for itself
    return jax.numpy.where(x > 0, x, 0.01 * x)


class StateFlipper(JaxCheckpoint):
    name = "state_flipper"

    def forward(self, params, x, *, checkpoint=True):
        out = super().forward(params, x, checkpoint=checkpoint)
        jax.config.update("jax_enable_x64", True)
        jax.nn.relu = leaky_relu
        return out
'''


@pytest.fixture(scope="module")
def flipper(tmp_path_factory):
    pytest.importorskip("flax")  # the canonical port
    return make_distribution(
        tmp_path_factory.mktemp("flipper"),
        "state-flipper",
        {"state_flipper": "state_flipper:StateFlipper"},
        {"state_flipper.py": FLIPPER},
        groups={SHARED_WORKERS: {"state_flipper": "jax"}},
    )


def _run(flipper, *flags: str) -> dict:
    args = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev"]
    args += ["--examples", "3", "--property", "b", "--property", "c"]  # what relu changes
    args += ["--implementation", "state_flipper", "--implementation", "jax_checkpoint", *flags]
    done = run_python(args, flipper)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON report (exit {done.returncode}):\n{done.stderr[-3000:]}")


def _failed(report: dict, name: str) -> set[str]:
    (port,) = [p for p in report["ports"] if p["name"] == name]
    return {o["property"] for o in port["outcomes"] if o["status"] != "pass"}


def test_the_ports_of_one_framework_share_a_worker_and_others_opt_in():
    assert worker_group("jax_checkpoint") == worker_group("flax_linen") == "jax"
    assert worker_group("keras_torch") == worker_group("pytorch")  # a backend's worker
    assert worker_group("torch_fsdp") == "torch_fsdp"  # its ranks are its own
    assert worker_group("some_outside_port") == "some_outside_port"  # unless it opts in


def test_under_xdist_the_ports_of_one_worker_are_one_scope():
    """So one xdist worker starts a framework's worker, once, for all its ports."""
    from conformance.pytest_plugin import worker_scope

    test = "tests/core/running/test_conformance.py::test_property[{}-c_vjp]"
    assert worker_scope(test.format("jax_checkpoint")) == worker_scope(test.format("haiku"))
    assert worker_scope(test.format("keras_torch")) == worker_scope(test.format("deepspeed"))
    assert worker_scope(test.format("pytorch")) != worker_scope(test.format("flax_linen"))
    assert (
        worker_scope("tests/core/commands/test_cli.py::test_list") is None
    )  # xdist's own: the module
    # A mutant's test goes with its family's ports: the worker that loaded them hunts it.
    mutant = "tests/core/running/test_mutants.py::test_mutant[{}]"
    assert worker_scope(mutant.format("no_checkpoint")) == worker_scope(test.format("flax_linen"))
    assert worker_scope(mutant.format("keras_torch_remat_none")) == worker_scope(
        test.format("pytorch")
    )
    assert worker_scope(mutant.format("not_a_mutant")) is None


def test_under_xdist_a_class_is_one_scope_with_its_module():
    """A module-scoped fixture that a class and the module's functions share is made once."""
    from conformance.pytest_plugin import xdist_scope

    module = "tests/torch/test_torch_fsdp_nodes.py"
    assert xdist_scope(f"{module}::TestFsdpNodes::test_x") == module
    assert xdist_scope(f"{module}::test_y[a::b]") == module
    port = "tests/core/running/test_conformance.py::test_property[pytorch-c_vjp]"
    assert xdist_scope(port) == xdist_scope(port.replace("c_vjp", "b_forward")) != port


def test_a_port_that_flips_state_leaves_the_next_port_s_verdict_its_own(flipper):
    report = _run(flipper)
    assert _failed(report, "jax_checkpoint") == set()
    (flipped,) = [p for p in report["ports"] if p["name"] == "state_flipper"]
    said = " ".join(flipped["warnings"])
    assert "state_flipper changed process-wide state" in said
    assert "jax_enable_x64 'False' -> 'True'" in said
    assert "jax.nn.relu was replaced" in said


def test_without_the_guard_the_flip_reaches_the_next_port(flipper):
    # One process, no isolation: the control. That it fails is the point, not a minimal example.
    report = _run(flipper, "--in-process", "--no-shrink")
    assert _failed(report, "jax_checkpoint"), "the flip never reached jax_checkpoint"


def test_a_mutant_that_flips_state_is_reported_like_a_port(tmp_path):
    """A mutants-only request (no port of its own), as the plugin and a run send one."""
    pytest.importorskip("flax")
    from tests.support.state_flipping_mutant import NAME

    output = tmp_path / "worker.out"
    child = isolation.Child(
        "tests.support.state_flipping_mutant:serve", (Settings(timeout=60.0),), output=output,
        env=process_state.worker_environment(),
    )  # fmt: skip
    messages = []
    try:
        child.send(("run", None, (), (NAME,), "", str(output)))
        while ("idle",) not in messages:  # the worker's last word on a request
            assert child.connection.poll(300), f"no answer:\n{output.read_text()[-3000:]}"
            messages.append(child.connection.recv())
    finally:
        child.send(("stop",))
        child.end(grace=10)
    said = [message[1] for message in messages if message[0] == "state"]
    assert said, messages
    assert f"the mutant {NAME} changed process-wide state" in said[0]
    assert "numpy errors: under 'ignore' -> 'warn'" in said[0]


class _Node:
    """An xdist worker as its scheduler sees it: sent tests by their index (the modules they
    are in are noted in `sent`, which the workers share, in the order sent)."""

    def __init__(self, name: str, collection: list[str], sent: list[str]):
        self.gateway, self.shutting_down = types.SimpleNamespace(id=name), False
        self.collection, self.sent = collection, sent

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.extend(dict.fromkeys(self.collection[i].split("::")[0] for i in indexes))

    def shutdown(self) -> None:
        pass


def test_the_ports_workers_go_first_then_the_modules_that_start_processes():
    """Long grains first, so that the end of a run is short tests on both xdist workers."""
    pytest.importorskip("xdist")
    from conformance.pytest_plugin import port_scopes
    from tests.conftest import _starts_processes

    port = "tests/core/running/test_conformance.py::test_property[pytorch-c_vjp]"
    starting = "tests/core/running/test_hostile_timeouts.py::test_one"
    in_process = [f"tests/core/checking/test_strategies.py::test_{i}" for i in range(9)]
    in_process += ["tests/jax/test_jax_schedules.py::test_one"]
    collection = [*in_process, starting, port]
    assert _starts_processes("tests/core/running/test_hostile_timeouts.py")
    # The mark first in a list of marks (a module of the full tier) counts too.
    assert _starts_processes("tests/core/versions/test_versions_sweep.py")
    assert not _starts_processes("tests/core/checking/test_strategies.py")

    # Two xdist workers (`-n 2`), as the README's test command starts them.
    option = types.SimpleNamespace(tx=["2*popen"], loadscopereorder=True)
    config = types.SimpleNamespace(option=option, getvalue=lambda name: getattr(option, name))
    scheduler = port_scopes(config, log=None, first=_starts_processes)
    sent: list[str] = []
    for node in (_Node("gw0", collection, sent), _Node("gw1", collection, sent)):
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    # xdist's own order (the most tests first) sends test_strategies.py first.
    assert sent[:3] == [
        "tests/core/running/test_conformance.py",
        "tests/core/running/test_hostile_timeouts.py",
        "tests/core/checking/test_strategies.py",
    ]
