"""The version sweep's fast tier: the `installed` set, the versions this interpreter has, run
with this interpreter (no venv, no pip), through the same sweep as the real one
(tests/core/versions/test_versions_sweep.py, in the full tier): the suite, the policy and
degradation probes, progress, the matrix, the reports, merge and the page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from conformance import merge
from conformance.page import build
from conformance.running import environment, framework_caches
from conformance.versions import plan, project, sweep, venvs
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

pytest.importorskip("jax")

SWEEP = [
    "versions", "jax", "--versions", "installed", "--implementation", "jax_checkpoint",
    "--examples", "2", "--no-mutants",
]  # fmt: skip


def _installed(name: str) -> str:
    return metadata.version(name)


def _compiled_cache() -> dict[str, str]:
    """This session's JAX compilation cache, kept for the sweep: its entries are keyed by what
    they compile, and a cold one triples the sweep's CPU time (13 s against 6 s here)."""
    leading = framework_caches.leading()
    found = environment.cache_dir(leading)
    return {} if found is None else {leading.setting: str(found)}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    directory = tmp_path_factory.mktemp("installed")
    out, reports, cache = directory / "sweep.json", directory / "reports", directory / "cache"
    command = [sys.executable, "-m", "conformance", *SWEEP, "--out", str(out)]
    command += ["--reports", str(reports), "--plain"]
    # A cache of its own: what the sweep makes there is seen whole (no venv among it).
    env = {**os.environ, "COLUMNS": "200", "REMAT_CACHE": str(cache), **_compiled_cache()}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads(out.read_text()), reports, cache


def test_the_installed_set_runs_in_this_interpreter_without_an_install(swept):
    done, data, _, cache = swept
    (found,) = data["sets"]
    pins = {"jax": _installed("jax"), "jaxlib": _installed("jaxlib")}
    assert (found["labels"], found["pins"]) == (["installed"], pins)
    assert found["title"] == f"installed · jax {pins['jax']}, jaxlib {pins['jaxlib']}"
    assert (found["state"], found["failed"]) == ("ran", False)
    assert found["venv"] == sys.prefix  # the interpreter's own environment
    assert (found["reused"], found["install_seconds"], found["released"]) == (False, 0.0, {})
    assert found["installed"]["jax"] == pins["jax"]
    # No venv made, no pip run: nothing under the cache's venvs is an environment.
    made = list((cache / venvs.FOLDER).rglob("*"))
    assert made, "the sweep wrote its set's outputs under the cache"
    assert not [p for p in made if p.name in ("pyvenv.cfg", "install.log", venvs.STATE)]
    assert "making a venv" not in done.stderr
    assert "installing" not in done.stderr


def test_every_property_and_policy_passes_at_the_installed_versions(swept):
    _, data, _, _ = swept
    (row,) = data["rows"]
    assert (row["set"], row["port"], row["state"]) == (0, "jax_checkpoint", "available")
    assert row["versions"]["jax"] == _installed("jax")
    statuses = {key: o["status"] for key, o in row["outcomes"].items()}
    assert set(statuses) == set(data["properties"])
    assert set(statuses.values()) == {"pass"}
    marks = {policy: cell["mark"] for policy, cell in row["policies"].items()}
    assert marks == {**dict.fromkeys(data["policies"], "pass"), "budget": "inexpressible"}


def test_the_installed_sweep_shows_progress_and_one_matrix(swept):
    done, data, _, _ = swept
    title = data["sets"][0]["title"]
    assert f"versions: [1/1] {title}: running the suite" in done.stderr
    assert f"versions: [1/1] {title}: the running interpreter, no install" in done.stderr
    out = done.stdout
    assert "remat-conformance versions · extra jax · 1 version set · profile ci" in out
    assert out.index(title) < out.index("(a) init")
    assert f"{title}: the running interpreter ({sys.prefix}), no install" in out


def test_merge_groups_the_installed_sweep_s_report(swept):
    _, _, reports, _ = swept
    merged = merge.combine(merge.read_all(sorted(reports.glob("*.json"))))
    # One version set: one group, unlabelled (merge labels groups once there are two sets).
    assert [(g.versions, [r.port for r in g.rows]) for g in merged.groups] == [
        ("", ["jax_checkpoint"])
    ]
    assert [v["jax"] for v in merged.versions.values()] == [_installed("jax")]
    assert merged.conflicts == []


def test_report_has_the_installed_sweep_s_versions_section(swept):
    _, data, reports, _ = swept
    page = build([data, *sorted(reports.glob("*.json"))], pictures=False)
    titles = [section.title for section in page.sections]
    # The versions' matrix first, after the runs' one-row-a-port summary ("At a glance").
    assert titles[: titles.index("Versions")] in ([], ["At a glance"])
    (matrix, *_) = page.sections[titles.index("Versions")].tables
    assert matrix.keys == ["0-jax_checkpoint"]
    assert "installed · jax" in page.html


# ---------------------------------------------------------------------------
# The set, planned (in process)
# ---------------------------------------------------------------------------


def test_installed_pins_are_the_interpreter_s_distributions_and_ask_no_index(monkeypatch):
    def no_index(*args):
        raise AssertionError("the installed set asked the index")

    monkeypatch.setattr(plan.registry, "lowest", no_index)
    monkeypatch.setattr(plan.registry, "newest", no_index)
    swept = plan.make("jax", ["installed", "pin"])
    installed, pin = plan.resolve(swept)  # the same versions, yet two sets: one in a venv
    import jax

    assert installed.labels == ["installed"]
    assert installed.pins["jax"] == jax.__version__
    assert pin.labels == ["pin"]
    assert installed.in_place
    assert not pin.in_place


def test_an_installed_set_whose_distribution_is_missing_is_not_run_and_says_why():
    swept = plan.make("jax", ["installed"])
    swept.requirements = [*swept.requirements, project.Requirement("no-such-dist-remat")]
    (vset,) = plan.resolve(swept)
    assert vset.skip == (
        "no-such-dist-remat is not installed in this interpreter: install the extra "
        "(pip install 'remat-conformance[jax]')"
    )


def test_the_installed_set_s_environment_is_this_interpreter_and_remove_spares_it(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("REMAT_CACHE", str(tmp_path / "cache"))
    swept = plan.make("jax", ["installed"])
    (vset,) = plan.resolve(swept)
    venv = venvs.ready(swept, vset, lambda text: None)
    assert venv.python == Path(sys.executable)
    assert venv.environment == Path(sys.prefix)
    assert venv.path.parent == tmp_path / "cache" / venvs.FOLDER  # its outputs only
    assert not (venv.path / "pyvenv.cfg").exists()
    # `--remove` removes a set's folder: never the interpreter's environment, even if asked.
    environment = tmp_path / "env"
    (environment / "bin").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(environment))
    venvs.remove(environment)
    venvs.remove(tmp_path)  # it holds the environment
    assert (environment / "bin").is_dir()
    venvs.remove(venv.path)
    assert not venv.path.exists()


def test_a_removed_installed_set_loses_its_folder_and_keeps_this_interpreter(tmp_path, monkeypatch):
    """`--remove` on the `installed` set, through the sweep itself (its suite stubbed)."""
    monkeypatch.setenv("REMAT_CACHE", str(tmp_path / "cache"))

    def no_suite(plan_, options, result, venv, env, say):
        # What the suite's process would be given: this interpreter and this environment.
        assert venv.python == Path(sys.executable)
        assert env[environment.ROOT_ENV] == str(tmp_path / "cache")
        assert (venv.path / venvs.SOURCE / "conformance").is_dir()
        result.state, result.reason = "no report", "stubbed"

    monkeypatch.setattr(sweep, "_suite", no_suite)
    swept = plan.make("jax", ["installed"])
    plan.resolve(swept)
    said: list[str] = []
    found = sweep.run(swept, sweep.Options(remove=True), lambda *args: said.append(args[3]))
    (result,) = found.results
    assert result.venv == sys.prefix
    assert Path(sys.executable).exists()
    assert said[:2] == ["the running interpreter, no install", "removing its folder"]
    made = sorted(p.name for p in (tmp_path / "cache" / venvs.FOLDER).iterdir())
    assert made == [".locks"]  # its folder is gone
