"""Outside packages that reach past their own port, run by the CLI (issue 79).

The poisoning mutant: `poison_port`, an ordinary outside port (the canonical's class, renamed)
whose module sets `flax.linen.relu` to a leaky relu on import, and opts in to JAX's worker.
On cb1e6a1 it agreed with the canonical it had patched, and the canonical side its worker
made went into the shared cache, where it failed the correct `jax_checkpoint` in every later
run. Now the canonical side is made where no outside code ran: the mutant fails, and the next
run on the same cache, without the package, is green. The same package claims the built-in
name `pytorch` (said, ignored) and registers a port whose own dependency is missing (broken).
A port that deletes the run's working directory, as a user can under a run, ends the run
with the machine's error. `tests/` on PYTHONPATH shadows `jax`: said, without pip advice.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conformance.running.suite import SHARED_WORKERS
from tests.support.helpers import ROOT, make_distribution, run_python
from tests.support.hostile import outcomes_of, run_json

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

OUTSIDE = '''
"""Outside ports that reach past themselves."""

import os

import flax.linen
import jax.numpy as jnp

from implementations.stacks.jax.flax_linen import FlaxLinen
from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint


def leaky_relu(x):
    return jnp.where(x > 0, x, 0.1 * x)


flax.linen.relu = leaky_relu  # the canonical's framework, patched on import


class PoisonPort(FlaxLinen):
    """The canonical port, renamed: it computes with the relu its module patched."""

    name = "poison_port"


class Claim(JaxCheckpoint):
    name = "pytorch"


class CwdPort(JaxCheckpoint):
    """Its first forward finds the working directory deleted (it deletes it: a user can)."""

    name = "cwd_port"

    def forward(self, params, x, *, checkpoint=True):
        if os.path.isdir(os.environ["DOOMED"]):
            os.rmdir(os.environ["DOOMED"])
        os.getcwd()  # FileNotFoundError, as torch's own call met it
        return super().forward(params, x, checkpoint=checkpoint)
'''

PORTS = {
    "poison_port": "outside_ports:PoisonPort",
    "pytorch": "outside_ports:Claim",
    "needs_dep_port": "needs_dep_ports:Port",
    "cwd_port": "outside_ports:CwdPort",
}
RUN = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev", "--examples", "3"]


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    pytest.importorskip("flax")  # the canonical port
    modules = {
        "outside_ports.py": OUTSIDE,
        "needs_dep_ports.py": "import definitely_missing_dep_xyz  # its own, not installed\n",
    }
    groups = {SHARED_WORKERS: {"poison_port": "jax"}}
    root = tmp_path_factory.mktemp("outside")
    return make_distribution(root, "outside-ports", PORTS, modules, groups)


@pytest.fixture(scope="module")
def poisoned_run(outside, tmp_path_factory):
    """The mutant, in JAX's worker, on an empty cache; and a named port that cannot load."""
    cache = tmp_path_factory.mktemp("cache")
    args = [*RUN, "--property", "b", "--property", "h"]
    for name in ("poison_port", "needs_dep_port"):
        args += ["--implementation", name]
    done = run_python(args, outside, env={"REMAT_CACHE": str(cache)})
    return done, run_json(done), cache


def test_the_poisoning_mutant_is_killed(poisoned_run):
    done, report, _ = poisoned_run
    assert done.returncode == 1, done.stderr[-3000:]
    poisoned = outcomes_of(report, "poison_port")
    assert poisoned["b_forward"]["status"] == "fail"  # against a canonical it did not patch
    hygiene = poisoned["h_hygiene"]
    assert hygiene["status"] == "fail"
    assert (
        "flax.linen.relu was replaced by code of the port poison_port's package"
        in (hygiene["message"])
    )


def test_the_next_run_on_the_same_cache_is_green(poisoned_run):
    """Whatever the mutant's run kept, it kept from a process that ran no outside code."""
    _, _, cache = poisoned_run
    assert list(cache.rglob("*.entry"))  # it kept something: the clean process's
    args = [*RUN, "--property", "b", "--property", "c", "--implementation", "jax_checkpoint"]
    done = run_python(args, ROOT, env={"REMAT_CACHE": str(cache)})  # the package is gone
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    good = outcomes_of(run_json(done), "jax_checkpoint")
    assert {o["status"] for o in good.values()} == {"pass"}, good


def test_a_named_port_without_its_own_dependency_is_broken(poisoned_run):
    _, report, _ = poisoned_run
    (port,) = [p for p in report["ports"] if p["name"] == "needs_dep_port"]
    assert port["state"] == "broken"
    assert port["reason"] == (
        "needs 'definitely_missing_dep_xyz': ModuleNotFoundError: "
        "No module named 'definitely_missing_dep_xyz'"
    )


def test_a_claim_on_a_built_in_name_is_said_in_the_run(poisoned_run):
    done, _, _ = poisoned_run
    assert (
        "the entry point 'pytorch' of outside-ports (outside_ports:Claim) claims the built-in "
        "port's name: ignored, the built-in pytorch is the one checked"
    ) in done.stderr


def test_a_working_directory_deleted_under_the_run_is_its_error(outside, tmp_path):
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    args = [*RUN, "--property", "b", "--implementation", "cwd_port"]
    done = run_python(args, outside, cwd=doomed, env={"DOOMED": str(doomed)})
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout == ""  # no report, so no port's ✗
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [
        "python -m conformance: error: the working directory was deleted under the run "
        "(No such file or directory): the run cannot go on; run it from a directory that exists"
    ], done.stderr[-3000:]


def test_a_framework_shadowed_by_the_tests_folder_is_named_without_pip_advice():
    pytest.importorskip("jax")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])}
    code = (
        "import implementations\n"
        "try:\n    implementations.load('jax_checkpoint')\n"
        "except implementations.PortUnavailable as error:\n"
        "    print(error.missing, error.reason)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    said = done.stdout
    assert said.startswith("False needs 'jax."), done.stdout + done.stderr[-2000:]
    assert f"jax is installed, but {ROOT / 'tests' / 'jax' / '__init__.py'} shadows it" in said
    assert "pip install" not in said
