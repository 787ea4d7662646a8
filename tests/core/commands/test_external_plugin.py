"""Ports from another package, registered through the entry point, as users write them.

Each test builds a tiny distribution in a temp dir: a `pyproject.toml` that
declares the entry points, a package with the port modules, and the
`*.dist-info` directory that installing it would write (`METADATA`,
`entry_points.txt`). With that directory on `PYTHONPATH`, `importlib.metadata`
finds the entry points as if the package were installed, without a build.

The ports: one written against the documented stable API
(`implementations.stacks.jax`), two written against old module names (which
keep working until 0.3.0, with a DeprecationWarning): one on 0.2.0's per-port
moves, one on 0.1's layouts (the flat names, `implementations.porting.*`, the
private rooms), the worked
example of docs/PORTING.md (a real library class, `eqx.nn.MLP`, read out of
the guide itself so that the guide cannot drift), and a wrong one.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.support.helpers import ROOT, make_distribution, run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

PORT_MODULE = '''
"""External ports on the stable API: a whole plain-JAX port, and a deliberately wrong one."""

import jax

from implementations.stacks.jax import JaxPort


def block(params, x):  # (D,) -> (F,)
    h = jax.nn.relu(x @ params["w1"] + params["b1"])  # (D,) @ (D, F) -> (F,)
    return h @ params["w2"] + params["b2"]  # (F,) @ (F, F) -> (F,)


class MyPort(JaxPort):
    """Plain JAX functions under jax.checkpoint; the parameters are the canonical arrays."""

    name = "my_port"
    framework = "jax"
    distributions = ("jax", "jaxlib")

    def to_native(self, w1, b1, w2, b2):
        return {"w1": w1, "b1": b1, "w2": w2, "b2": b2}

    def to_canonical(self, tree):
        return tree["w1"], tree["b1"], tree["w2"], tree["b2"]

    def apply(self, tree, x, checkpoint):
        return (jax.checkpoint(block) if checkpoint else block)(tree, x)


class WrongPort(MyPort):
    """Reports the plain path's backward pass as the checkpointed one: no checkpoint there."""

    name = "wrong_port"

    def backward_record(self, params, x, *, checkpoint=True):
        return super().backward_record(params, x, checkpoint=False)
'''


# Written against 0.1's module names, when the ports sat at the top of `implementations`.
LEGACY_MODULE = '''
"""A port written against the old module names: a variant of a built-in port."""

from implementations.jax_checkpoint import JaxCheckpoint


class LegacyPort(JaxCheckpoint):
    name = "legacy_port"
'''

# Written against 0.1's layouts: every kind of old name, in both import forms.
OLD_LAYOUTS_MODULE = '''
"""A port written against 0.1's names: the flat modules, `porting` and a private room."""

import jax

import implementations.flax_rng
from implementations import jax_flax_init
from implementations._jax.inputs import checked_x
from implementations.canonical_init import canonical_params
from implementations.porting.jax import JaxPort


class OldLayoutsPort(JaxPort):
    """Plain JAX under jax.checkpoint, its init and input checks through the old names."""

    name = "old_layouts_port"
    framework = "jax"
    distributions = ("jax", "jaxlib")

    def init_params(self, seed, dim, features):
        params = jax_flax_init.init_params(seed, dim, features)
        assert implementations.flax_rng.dense_kernel_fold_value(0) > 0
        assert canonical_params(seed, dim, features).w1.shape == params.w1.shape
        return params

    def to_native(self, w1, b1, w2, b2):
        return (w1, b1, w2, b2)

    def to_canonical(self, native):
        return native

    def apply(self, params, x, checkpoint):
        def mlp(p, x):  # (D,) -> (F,)
            return jax.nn.relu(checked_x(x) @ p[0] + p[1]) @ p[2] + p[3]

        return (jax.checkpoint(mlp) if checkpoint else mlp)(params, x)
'''

GUIDE = ROOT / "docs" / "PORTING.md"


def worked_example() -> str:
    """The worked example's code, as docs/PORTING.md shows it."""
    text = GUIDE.read_text()
    found = re.search(r"<!-- worked-example -->\n```python\n(.*?)```", text, re.DOTALL)
    assert found, "docs/PORTING.md has no worked example between the markers"
    return found.group(1)


PORTS = {
    "my_port": "my_port_pkg.port:MyPort",
    "wrong_port": "my_port_pkg.port:WrongPort",
    "legacy_port": "my_port_pkg.legacy:LegacyPort",
    "old_layouts_port": "my_port_pkg.old_layouts:OldLayoutsPort",
    "eqx_mlp": "my_port_pkg.eqx_mlp:EqxMlp",
}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    pytest.importorskip("jax")
    return make_distribution(
        tmp_path_factory.mktemp("plugin"),
        "my-port-pkg",
        PORTS,
        {
            "my_port_pkg/__init__.py": "",
            "my_port_pkg/port.py": PORT_MODULE,
            "my_port_pkg/legacy.py": LEGACY_MODULE,
            "my_port_pkg/old_layouts.py": OLD_LAYOUTS_MODULE,
            "my_port_pkg/eqx_mlp.py": worked_example(),
        },
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
    """One `python -m conformance` run over the external ports."""
    pytest.importorskip("flax")  # the canonical port
    pytest.importorskip("equinox")  # the worked example's library
    args = ["-m", "conformance", "--profile", "dev", "--examples", "3", "--no-mutants", "--json"]
    # Shrunk: a failure drawn from the derandomized example bank comes back through Hypothesis,
    # which gives its replay command a --reproduce blob (wrong_port fails on every example, so
    # the shrink is short).
    for name in PORTS:
        args += ["--implementation", name]
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


@pytest.mark.parametrize("name", ["my_port", "legacy_port", "old_layouts_port", "eqx_mlp"])
def test_the_suite_checks_an_external_port(suite_run, name):
    _, report = suite_run
    outcomes = {o["property"]: o for o in _row(report, name)["outcomes"]}
    assert set(outcomes) == set(report["properties"])
    for key, outcome in outcomes.items():
        # It declares no composition case: skipped, saying why. legacy_port, a variant of
        # jax_checkpoint, inherits its cases: (k) runs and passes.
        if key == "k_composition" and name != "legacy_port":
            assert outcome["status"] == "skip", outcome
            assert "twice: not declared" in outcome["message"], outcome["message"]
            continue
        # Nor the stateful block: skipped, saying why. legacy_port inherits jax_checkpoint's
        # step and its declaration: (l) runs and passes.
        if key == "l_state" and name != "legacy_port":
            assert outcome["status"] == "skip", outcome
            assert outcome["message"] == "not expressible: not declared", outcome["message"]
            continue
        assert outcome["status"] == "pass", (key, outcome["message"])
        assert outcome["examples"] > 0, key


def test_the_old_names_warn_and_name_the_new_ones(plugin):
    code = "import warnings; warnings.simplefilter('always')\nimport my_port_pkg.legacy\n"
    done = run_python(["-c", code], plugin)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        "implementations.jax_checkpoint has moved: import from "
        "implementations.stacks.jax.jax_checkpoint instead (the old name goes in 0.3.0)"
    ) in " ".join(done.stderr.split())
    assert "legacy.py" in done.stderr  # the warning points at the importer


def test_the_names_of_0_1_warn_and_name_their_new_homes(plugin):
    code = "import warnings; warnings.simplefilter('always')\nimport my_port_pkg.old_layouts\n"
    done = run_python(["-c", code], plugin)
    assert done.returncode == 0, done.stderr[-3000:]
    text = " ".join(done.stderr.split())
    for old, new, package in [
        ("implementations.flax_rng", "implementations.stacks.numpy.keys", "numpy"),
        ("implementations.jax_flax_init", "implementations.stacks.jax.flax_init", "jax"),
        ("implementations._jax.inputs", "implementations.stacks.jax.inputs", "jax"),
        ("implementations.canonical_init", "implementations.stacks.numpy.init", "numpy"),
    ]:
        assert (
            f"DeprecationWarning: {old} has moved: import from {new} instead (its names are "
            f"also in implementations.stacks.{package}; the old name goes in 0.3.0)"
        ) in text, old
    for old, new in [
        ("implementations.porting", "implementations.stacks"),
        ("implementations.porting.jax", "implementations.stacks.jax"),
        ("implementations._jax", "implementations.stacks.jax"),
    ]:
        expected = f"{old} has moved: import from {new} instead (the old name goes in 0.3.0)"
        assert f"DeprecationWarning: {expected}" in text, old
    assert text.count("old_layouts.py") >= 7  # every warning points at the importer


def test_a_wrong_external_port_fails_clearly(suite_run):
    done, report = suite_run
    assert done.returncode == 1, done.stderr[-3000:]
    assert report["failed"]
    outcomes = {o["property"]: o for o in _row(report, "wrong_port")["outcomes"]}
    failed = {key for key, o in outcomes.items() if o["status"] == "fail"}
    # Its checkpoint is missing: (e) sees it, and so does (j) under full remat (it keeps a).
    assert failed == {"e_evidence", "j_policies"}, outcomes
    assert "policy full: saves" in outcomes["j_policies"]["message"]
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


def test_list_shows_an_external_port_as_the_guide_says(plugin):
    """The guide's `list` line, against what `list` prints for the plugin's port."""
    block = re.search(r"<!-- list-output -->\n```console\n(.*?)```", GUIDE.read_text(), re.S)
    assert block, "docs/PORTING.md has no list-output block"
    (said,) = re.findall(r"^\$ python -m conformance list +# (.*)$", block.group(1), re.M)
    done = run_python(["-m", "conformance", "list", "--width", "200"], plugin)
    assert done.returncode == 0, done.stderr[-3000:]
    (shown,) = [line for line in done.stdout.splitlines() if line.startswith("my_port ")]
    assert " ".join(shown.split()) == said


def test_a_quoted_entry_point_is_broken_and_says_why(tmp_path):
    # The value copied with its TOML quotes into entry_points.txt.
    plugin = make_distribution(
        tmp_path, "quoted-pkg", {"quoted_port": '"quoted_mod:Port"'}, {"quoted_mod.py": ""}
    )
    done = run_python(["-m", "conformance", "list"], plugin)
    text = " ".join(done.stdout.split())
    assert "quoted_port broken" in text
    assert "is quoted" in text


def test_the_replay_command_replays_the_failing_example_and_writes_nothing_here(
    suite_run, plugin, tmp_path
):
    _, report = suite_run
    failed = {o["property"]: o for o in _row(report, "wrong_port")["outcomes"]}["e_evidence"]
    words = shlex.split(failed["replay"])
    assert words[:4] == ["python", "-m", "conformance", "run"]
    assert "--reproduce" in words  # the dev profile's random example, as a blob
    # From another directory: nothing may be written where the suite is run.
    done = run_python([*words[1:], "--json"], plugin, cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    replayed = {o["property"]: o for o in _row(json.loads(done.stdout), "wrong_port")["outcomes"]}
    assert list(replayed) == ["e_evidence"]
    assert replayed["e_evidence"]["status"] == "fail"
    assert replayed["e_evidence"]["examples"] == 0  # it failed on the first: the replayed one
    assert list(tmp_path.iterdir()) == []  # no .hypothesis/ here


def test_a_replay_that_no_longer_fails_says_did_not_reproduce_and_exits_0(
    suite_run, plugin, tmp_path
):
    """The wrong port's failing example, replayed on the right port: a failure since fixed
    (the blob says whose it is: it is renamed too, as if the wrong port had been fixed)."""
    _, report = suite_run
    failed = {o["property"]: o for o in _row(report, "wrong_port")["outcomes"]}["e_evidence"]
    words = shlex.split(failed["replay"])
    words[words.index("--implementation") + 1] = "my_port"  # same strategy, a correct port
    blob = words.index("--reproduce") + 1
    words[blob] = words[blob].replace("wrong_port:", "my_port:", 1)

    done = run_python([*words[1:], "--json"], plugin, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    replayed = {o["property"]: o for o in _row(json.loads(done.stdout), "my_port")["outcomes"]}
    assert replayed["e_evidence"]["status"] == "pass"
    assert replayed["e_evidence"]["message"].startswith("did not reproduce")

    done = run_python(words[1:], plugin, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "my_port · e_evidence: did not reproduce" in done.stdout
