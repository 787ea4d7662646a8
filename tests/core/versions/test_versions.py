"""The version sweep's parts that need no venv of their own: the extras and pins it reads, the
sets it resolves (asking the index as CI reaches it), pip's conflicts it releases, a set that
cannot install, torch held at its pin, degradations across sets, and its documents.

The real sweep (two JAX versions installed and run) is tests/core/versions/test_versions_sweep.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from conformance import versions
from conformance.checking import policy_expectations
from conformance.tables.kinds import versions as versions_tables
from conformance.versions import plan, project, registry, render, summary, venvs
from conformance.versions.sweep import Options, SetResult, Sweep
from implementations import manifests
from tests.support.helpers import ROOT, run_cli

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

VERSIONS_MD = (ROOT / "docs" / "VERSIONS.md").read_text()


# ---------------------------------------------------------------------------
# What the project declares
# ---------------------------------------------------------------------------


def test_every_framework_extra_is_sweepable_and_its_floors_are_lower_bounds():
    extras = project.sweepable()
    named = {e for name in manifests.ports() for e in project.extras_of(name)}
    # Every extra a port names and that installs something; never a group of extras.
    assert set(extras) == {e for e in named if project.requirements(e)}
    assert not {"all", "engines", "test", "bench", "tfjs"} & set(extras)
    for extra in extras:
        for requirement in project.requirements(extra):
            assert requirement.specifier.startswith(">="), (extra, requirement)


def test_an_extra_s_distributions_and_ports_come_from_pyproject_and_the_manifests():
    assert [r.name for r in project.requirements("flax")] == ["jax", "jaxlib", "flax"]
    assert project.requirements("mlx")[0].at("0.28.0") == "mlx[cpu]==0.28.0"
    assert project.ports_of("jax") == ["jax_checkpoint", "keras_jax"]  # jax_spmd: scale only
    assert project.ports_of("keras") == ["keras_jax", "keras_torch", "keras_tensorflow"]
    assert project.named_only().keys() == {"torch"}
    assert project.build_requires(["deepspeed"])[0] == "torch"
    swept = plan.make("keras")
    assert swept.extras == ["keras", "flax", "jax", "torch", "tensorflow"]


def test_the_pins_are_the_constraints_file_s():
    constraints = project.read_constraints(ROOT / "constraints.txt")
    assert constraints.pins["jax"] == "0.10.2"
    assert constraints.pins["ml-dtypes"] == constraints.pins[project.normalize("ml_dtypes")]
    text = constraints.without({"jax", "ml-dtypes"})
    assert "jax==" not in text
    assert "ml_dtypes==" not in text
    assert "jaxlib==" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["all"], "'all' is not an extra a sweep takes"),
        (["tfjs"], "'tfjs' is not an extra a sweep takes"),
        (["jax", "--versions", "jax>=0.7"], "'jax>=0.7' is not a version set"),
        (["jax", "--implementation", "nope"], "not a known port"),
    ],
)
def test_a_sweep_that_cannot_be_planned_is_a_usage_error_before_any_work(args, message):
    done = run_cli("versions", *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert done.stderr.startswith("python -m conformance versions: error:")


# ---------------------------------------------------------------------------
# Version sets, from the index as CI reaches it
# ---------------------------------------------------------------------------


def test_lowest_pin_and_newest_resolve_from_pyproject_the_constraints_and_the_index():
    swept = plan.make("jax")
    sets = plan.resolve(swept)
    lowest = sets[0]
    assert lowest.labels == ["lowest"]
    assert lowest.pins == {"jax": "0.7.0", "jaxlib": "0.7.0"}  # jax>=0.7 is 0.7.0
    pin = next(s for s in sets if "pin" in s.labels)
    assert pin.pins == {"jax": "0.10.2", "jaxlib": "0.10.2"}
    newest = registry.newest("jax")
    assert (sets[-1].labels, sets[-1].pins["jax"]) == (
        (["pin", "newest"], "0.10.2") if newest == "0.10.2" else (["newest"], newest)
    )
    assert registry.lowest("tensorflow-cpu", ">=2.16") == "2.16.1"  # 2.16.0 is not served


def test_torch_runs_only_where_named_and_the_sweep_says_why(tmp_path):
    out = tmp_path / "torch.json"
    done = run_cli("versions", "torch", "--versions", "lowest", "--out", str(out), "--plain")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    (found,) = data["sets"]
    assert found["state"] == "not run"
    assert "CUDA builds of several GB" in found["reason"]
    assert "--versions torch==2.4.0" in found["reason"]
    assert found["venv"] == ""  # nothing installed
    assert "not run: torch held at its pin" in done.stdout  # said once
    assert "not run: not run" not in done.stdout
    assert "no set ran" in done.stdout  # not "all passed"
    # Named, it is a set like any other (planned here, not installed).
    named = plan.make("torch", ["torch==2.4.0"])
    (vset,) = plan.resolve(named)
    assert (vset.pins, vset.skip) == ({"torch": "2.4.0"}, "")


def test_a_set_that_holds_torch_at_its_pin_runs_where_it_still_differs(tmp_path):
    # deepspeed's lowest asks for torch 2.4.0: held at the pin, it runs if deepspeed differs.
    constraints = tmp_path / "constraints.txt"
    text = (ROOT / "constraints.txt").read_text()
    constraints.write_text(re.sub(r"(?m)^deepspeed==.*$", "deepspeed==9.9.9", text))
    swept = plan.make("deepspeed", ["lowest"], constraints=constraints)
    (vset,) = plan.resolve(swept)
    assert vset.pins["torch"] == swept.constraints.pins["torch"]
    assert vset.wanted["torch"] == registry.lowest("torch", ">=2.4")
    assert any("torch held at its pin" in note for note in vset.notes)
    assert vset.skip == ""
    # With the real pins, deepspeed's lowest is its pin: holding torch makes it the pin set.
    (vset,) = plan.resolve(plan.make("deepspeed", ["lowest"]))
    assert vset.skip.startswith("torch held at its pin")


def test_a_version_that_cannot_install_is_a_row_that_says_why(tmp_path):
    out, markdown = tmp_path / "bad.json", tmp_path / "bad.md"
    # A cache of its own: whether the failed venv is removed is asked of this run alone (a
    # second test run beside this one makes the same venv in the user's cache).
    cache = tmp_path / "cache"
    # flax named too: pip fails in one round (9 s), not after backtracking through every
    # flax release once the pinned one is released (40 s and more).
    done = run_cli(
        "versions", "jax", "--versions", "jax==0.0.0,flax==0.12.8", "--implementation",
        "jax_checkpoint",
        "--no-mutants", "--out", str(out), "--markdown", str(markdown), "--plain",
        env={**os.environ, "REMAT_CACHE": str(cache)},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    data = json.loads(out.read_text())
    (found,) = data["sets"]
    assert found["state"] == "not installed"
    assert "jax==0.0.0" in found["reason"]
    assert data["rows"] == [
        {"set": 0, "port": "", "state": "not installed", "reason": found["reason"]}
    ]
    made = [path.name for path in (cache / venvs.FOLDER).iterdir()]
    assert made == [".locks"]  # a failed venv is removed
    assert "not installed" in done.stdout
    assert "not installed" in markdown.read_text()


# ---------------------------------------------------------------------------
# pip's conflicts, in pip's words (from its output on this machine)
# ---------------------------------------------------------------------------

FLAX_PINNED = """ERROR: Cannot install equinox==0.13.0, flax==0.12.8 and jax==0.7.0 because these \
package versions have conflicting dependencies.

The conflict is caused by:
    The user requested jax==0.7.0
    equinox 0.13.0 depends on jax>=0.4.38
    flax 0.12.8 depends on jax>=0.10.0

To fix this you could try to:
"""
TF_ML_DTYPES = """The conflict is caused by:
    tensorflow-cpu 2.16.1 depends on ml-dtypes~=0.3.1
    The user requested (constraint) ml-dtypes==0.6.0
"""
TF_JAX = """The conflict is caused by:
    tensorflow-cpu 2.16.1 depends on ml-dtypes~=0.3.1
    jax 0.10.2 depends on ml_dtypes>=0.5.0
"""


def test_a_second_sweep_waits_for_the_venv_the_first_holds(tmp_path):
    """Two sweeps on one machine share the cache's venvs, and take each one at a time: the
    second says it waits, and goes on once the first lets go (before, one rewrote the other's
    copy of the project and its report: two test runs at once failed here)."""
    path = tmp_path / "jax-pin-0123456789"
    other = textwrap.dedent(
        f"""
        from pathlib import Path
        from conformance.versions import venvs
        with venvs.locked(Path({str(path)!r}), "use", lambda text: print(text, flush=True)):
            print("holding", flush=True)
        """
    )
    said: list[str] = []
    with venvs.locked(path, "use", said.append):
        second = subprocess.Popen(
            [sys.executable, "-c", other], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        assert second.stdout.readline() == "waiting: another sweep holds its venv (use)\n"
    assert second.communicate(timeout=120)[0] == "holding\n"
    assert said == []  # the first found it free


def test_a_conflict_releases_the_pins_it_names_but_holds_the_canonical_s():
    pins = {"flax": "0.12.8", "jax": "0.10.2", "ml-dtypes": "0.6.0", "numpy": "2.4.6"}
    held = {"jax", "jaxlib", "flax", "torch"}
    # The canonical's flax is held, unless it depends on what the set moves (jax).
    lines = venvs.conflict(FLAX_PINNED)
    assert lines[-1] == "flax 0.12.8 depends on jax>=0.10.0"
    assert venvs.releasable(lines, pins, held - {"jax"}, {"jax", "jaxlib"}) == {"flax"}
    # A pin a requirement rules out is released.
    assert venvs.releasable(venvs.conflict(TF_ML_DTYPES), pins, held, {"tensorflow-cpu"}) == {
        "ml-dtypes"
    }
    # The canonical's jax is not, for tensorflow: pip's reason becomes the set's.
    lines = venvs.conflict(TF_JAX)
    assert venvs.releasable(lines, pins, held, {"tensorflow-cpu"}) == set()
    said = venvs.reason(TF_JAX, lines, held, pins)
    assert "tensorflow-cpu 2.16.1 depends on ml-dtypes~=0.3.1" in said
    assert "held at the constraints' pins: jax==0.10.2" in said


# ---------------------------------------------------------------------------
# Degradations across version sets
# ---------------------------------------------------------------------------


def test_every_documented_degradation_has_a_probe_to_sweep():
    for documented in policy_expectations.all_degradations():
        module, _, function = documented.probe.partition(":")
        path = ROOT / (module.replace(".", "/") + ".py")
        assert path.is_file(), documented
        signature = rf"^def {function}\(\) -> tuple\[bool, str\]:"
        assert re.search(signature, path.read_text(), flags=re.M), documented


def _sweep(states: list[bool | None]) -> Sweep:
    swept = plan.make("tensorflow", ["pin"], ["tensorflow"])
    (documented,) = [d for d in policy_expectations.all_degradations() if d.family == "tensorflow"]
    results = []
    for index, holds in enumerate(states):
        vset = plan.VersionSet(["named"], {"tensorflow-cpu": f"2.{18 + index}.0"})
        said = {"holds": holds, "seen": f"seen {index}"} if holds is not None else {"error": "x"}
        results.append(SetResult(vset, state="ran", degradations={"tensorflow:full": said}))
    return Sweep(swept, Options(policies=False), results, [documented])


def test_the_first_version_that_differs_and_each_change_are_named():
    data = summary.to_json(_sweep([False, True, None, True]))
    (found,) = data["degradations"]
    assert found["first_difference"] == 0
    assert found["changes"] == [{"from": 0, "to": 1, "holds": True}]
    (line, *details) = versions_tables.degradation_lines(data)
    assert "the first version that differs: named · tensorflow-cpu 2.18.0" in line
    assert "starts holding at named · tensorflow-cpu 2.19.0" in line
    assert "  probe failed at named · tensorflow-cpu 2.20.0: x" in details
    steady = summary.to_json(_sweep([True, True]))["degradations"][0]
    assert (steady["first_difference"], steady["changes"]) == (None, [])
    assert (
        "holds at every version swept"
        in versions_tables.degradation_lines(summary.to_json(_sweep([True, True])))[0]
    )
    # In Markdown each set's line is nested under its degradation's.
    text = render.markdown(summary.to_json(_sweep([False, True])))
    assert "\n- tensorflow · full: " in text
    assert "\n  - named · tensorflow-cpu 2.19.0: seen 1\n" in text


# ---------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------


def test_every_field_of_the_sweep_s_json_is_documented():
    data = summary.to_json(_sweep([True]))
    fields = {
        "top level": set(data),
        "sets": set(data["sets"][0]),
        "rows": {"set", "port", "state", "reason", "versions", "outcomes", "policies", "seconds"},
        "degradations": set(data["degradations"][0]),
    }
    for section, keys in fields.items():
        missing = sorted(key for key in keys if f"| `{key}` |" not in VERSIONS_MD)
        assert not missing, (section, missing)
    assert f"**{versions.sweep.SCHEMA}**" in VERSIONS_MD


def test_the_versions_page_names_every_version_the_extras_allow():
    # docs/VERSIONS.md's floors table is pyproject's: a raised floor is written down there.
    for extra in project.sweepable():
        for requirement in project.requirements(extra):
            floor = requirement.specifier.removeprefix(">=")
            row = f"| `{extra}` | {requirement.name} | {floor} |"
            assert row in VERSIONS_MD, row
