"""A port from another package, registered through the entry point, as users will write one.

Each test builds a tiny distribution in a temp dir: a `pyproject.toml` that
declares the entry points, a package with the port module, and the
`*.dist-info` directory that installing it would write (`METADATA`,
`entry_points.txt`). With that directory on `PYTHONPATH`, `importlib.metadata`
finds the entry points as if the package were installed, without a build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from implementations import ENTRY_POINT_GROUP

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


def make_distribution(
    root: Path, name: str, entry_points: dict[str, str], modules: dict[str, str]
) -> Path:
    """Write a source tree and its dist-info into `root`; return `root` for `PYTHONPATH`.

    **Arguments:**

    - `name`: the distribution's name, e.g. `"my-port-pkg"`.
    - `entry_points`: port name -> `"module:Class"`, in the suite's group.
    - `modules`: relative path -> source, e.g. `{"my_port_pkg/port.py": ...}`.
    """
    points = "\n".join(f'{port} = "{target}"' for port, target in entry_points.items())
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["setuptools>=69"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "{name}"
            version = "0.1"
            dependencies = ["remat-conformance"]

            [project.entry-points."{ENTRY_POINT_GROUP}"]
            """
        )
        + points
        + "\n"
    )
    for relative, source in modules.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    # What `pip install` would write next to the package (the name normalized).
    dist_info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = [f"[{ENTRY_POINT_GROUP}]"] + [f"{p} = {t}" for p, t in entry_points.items()]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return root


def run_python(args: list[str], path: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python *args` with `path` on `PYTHONPATH` and a wide terminal for the report."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
        "JAX_PLATFORMS": "cpu",
    }
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


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
