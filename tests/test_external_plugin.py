"""A port from another package, registered through the entry point, as users will write one.

Each test builds a tiny distribution in a temp dir: a `pyproject.toml` that
declares the entry points, a package with the port module, and the
`*.dist-info` directory that installing it would write (`METADATA`,
`entry_points.txt`). With that directory on `PYTHONPATH`, `importlib.metadata`
finds the entry points as if the package were installed, without a build.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import make_distribution, run_python

ROOT = Path(__file__).resolve().parents[1]

PORT_MODULE = '''
"""An external port: the plain JAX port under its own name, and a deliberately wrong one."""

from implementations.jax_checkpoint import JaxCheckpoint


class MyPort(JaxCheckpoint):
    """The plain JAX port, unchanged, under another name."""

    name = "my_port"


class WrongPort(JaxCheckpoint):
    """Reports the plain path's backward pass as the checkpointed one: no checkpoint there."""

    name = "wrong_port"

    def backward_record(self, params, x, *, checkpoint=True):
        return super().backward_record(params, x, checkpoint=False)
'''


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    pytest.importorskip("jax")
    return make_distribution(
        tmp_path_factory.mktemp("plugin"),
        "my-port-pkg",
        {"my_port": "my_port_pkg.port:MyPort", "wrong_port": "my_port_pkg.port:WrongPort"},
        {"my_port_pkg/__init__.py": "", "my_port_pkg/port.py": PORT_MODULE},
    )


def test_the_entry_point_is_discovered(plugin):
    done = run_python(
        [
            "-c",
            "import implementations, json, sys; "
            "print(json.dumps(implementations.registered())); "
            "assert 'jax' not in sys.modules",  # discovery imports no port
        ],
        plugin,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["my_port"] == ["my_port_pkg.port:MyPort", "entry point of my-port-pkg"]
    assert found["wrong_port"][0] == "my_port_pkg.port:WrongPort"
    assert found["jax_checkpoint"][1] == "built-in"


@pytest.fixture(scope="module")
def suite_run(plugin) -> tuple[subprocess.CompletedProcess, dict]:
    """One `python -m conformance` run over both external ports (one JAX start-up, not two)."""
    pytest.importorskip("flax")  # the canonical port
    args = ["-m", "conformance", "--profile", "dev", "--examples", "3", "--no-mutants"]
    args += ["--jobs", "1", "--json", "--implementation", "my_port"]
    args += ["--implementation", "wrong_port"]
    done = run_python(args, plugin)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON report (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return done, report


def _row(report: dict, name: str) -> dict:
    (row,) = [port for port in report["ports"] if port["name"] == name]
    assert row["state"] == "available", row["reason"]
    return row


def test_the_suite_checks_an_external_port(suite_run):
    _, report = suite_run
    outcomes = {o["property"]: o for o in _row(report, "my_port")["outcomes"]}
    assert set(outcomes) == set(report["properties"])
    for key, outcome in outcomes.items():
        assert outcome["status"] == "pass", (key, outcome["message"])
        assert outcome["examples"] > 0, key


def test_a_wrong_external_port_fails_clearly(suite_run):
    done, report = suite_run
    assert done.returncode == 1, done.stderr[-3000:]
    assert report["failed"]
    outcomes = {o["property"]: o for o in _row(report, "wrong_port")["outcomes"]}
    failed = {key for key, o in outcomes.items() if o["status"] == "fail"}
    assert failed == {"e_evidence"}, outcomes
    message = outcomes["e_evidence"]["message"]
    # The message names the port, what was measured, and what is wrong.
    assert message.startswith("[wrong_port] VJP with checkpoint on:"), message
    assert "activation" in message


def test_a_broken_external_port_is_reported(tmp_path):
    # An entry point whose target is not an Implementation: "broken", exit 1.
    plugin = make_distribution(
        tmp_path,
        "broken-port-pkg",
        {"broken_port": "broken_port_mod:NotAPort"},
        {"broken_port_mod.py": "class NotAPort:\n    name = 'broken_port'\n"},
    )
    done = run_python(
        ["-m", "conformance", "--implementation", "broken_port", "--no-mutants", "--jobs", "1"],
        plugin,
    )
    assert done.returncode == 1
    assert "broken_port" in done.stdout
    assert "not an Implementation" in done.stdout
