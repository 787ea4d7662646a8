"""docs/ci/conformance-matrix.yml: valid for GitHub, and its jobs feed `merge` what it reads.

The schema check is check-jsonschema's vendored GitHub workflow schema (offline).
The structure checks are what a schema cannot see: artifact names that the merge
job's download pattern and glob match, a job for every port, real extras.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys

import pytest

import implementations
from implementations import manifests
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

WORKFLOW = ROOT / "docs" / "ci" / "conformance-matrix.yml"
JOBS = ("stacks", "accelerators")  # the jobs that write reports


#: The hosted CI job of the sharded ports (profile `scale`): their start-ups are the profile's.
SCALE_JOB = manifests.CiJob("linux-cpu-sharded", "ubuntu-24.04")


def ci_jobs() -> list[dict[str, str]]:
    """The hosted jobs of docs/ci/conformance-matrix.yml, derived from the manifests: each
    port in its stack's job (the sharded ones in `SCALE_JOB`, under `--profile scale`), each
    job installing the canonical port's extra and its ports' (`name`, `runner`, `install`,
    `ports`, `flags`)."""
    jobs: dict[str, dict] = {}
    for manifest, entry in manifests.ports().values():
        if manifest.ci is None:
            continue
        job = SCALE_JOB if entry.profile == manifests.SCALE else manifest.ci
        found = jobs.setdefault(
            job.name,
            {
                "job": job,
                "extras": [manifests.ports()[manifests.CANONICAL_PORT][1].extra],
                "args": [],
                "ports": [],
            },
        )
        found["extras"] += entry.extra.split(",")
        found["args"] += [manifest.ci.pip_args] if manifest.ci.pip_args else []
        found["ports"].append(entry.name)
    return [
        {
            "name": name,
            "runner": found["job"].runner,
            "install": " ".join(
                [
                    f'-e ".[{",".join(dict.fromkeys(found["extras"]))}]"',
                    *dict.fromkeys(found["args"]),
                ]
            ),
            "ports": " ".join(found["ports"]),
            "flags": "--profile scale" if found["job"] is SCALE_JOB else "",
        }
        for name, found in jobs.items()
    ]


@pytest.fixture(scope="module")
def workflow() -> dict:
    yaml = pytest.importorskip("ruamel.yaml")
    # YAML 1.2, as GitHub reads it: the key `on` stays a string.
    return yaml.YAML(typ="safe", pure=True).load(WORKFLOW.read_text())


def _entries(workflow: dict) -> list[dict]:
    matrices = [workflow["jobs"][job]["strategy"]["matrix"] for job in JOBS]
    return [entry for matrix in matrices for entry in matrix["include"]]


def _step(job: dict, uses: str = "", name: str = "") -> dict:
    (found,) = [
        s
        for s in job["steps"]
        if (uses and s.get("uses", "").startswith(uses)) or (name and s.get("name") == name)
    ]
    return found


def test_the_workflow_is_valid_for_github():
    pytest.importorskip("check_jsonschema")
    command = [sys.executable, "-m", "check_jsonschema"]
    command += ["--builtin-schema", "vendor.github-workflows", str(WORKFLOW)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_can_fail(tmp_path):
    check_jsonschema = pytest.importorskip("check_jsonschema")
    assert check_jsonschema
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "runs_on:", 1))
    command = [sys.executable, "-m", "check_jsonschema"]
    command += ["--builtin-schema", "vendor.github-workflows", str(broken)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout


def test_the_merge_job_waits_for_every_report_and_runs_after_failures(workflow):
    merge = workflow["jobs"]["merge"]
    assert sorted(merge["needs"]) == sorted(JOBS)
    assert "!cancelled()" in merge["if"]  # a failed stack still gets merged
    for job in JOBS:
        assert workflow["jobs"][job]["strategy"]["fail-fast"] is False


def test_every_report_reaches_the_merge(workflow):
    merge = workflow["jobs"]["merge"]
    download = _step(merge, uses="actions/download-artifact@")["with"]
    assert download["merge-multiple"] is True
    command = _step(merge, name="Merge")["run"]
    glob = re.search(r"conformance merge (\S+)", command).group(1)
    assert glob.startswith(download["path"] + "/")
    names = [entry["name"] for entry in _entries(workflow)]
    assert len(names) == len(set(names))
    for job in JOBS:
        upload = _step(workflow["jobs"][job], uses="actions/upload-artifact@")
        assert "!cancelled()" in upload["if"]  # a failing run still uploads its report
        run = _step(workflow["jobs"][job], name="Conformance suite")["run"]
        assert "python -m conformance" in run
        assert "--json" in run
        assert '> "report-$NAME.json"' in run
        assert workflow["jobs"][job]["steps"][-1] is upload
        for name in names:
            artifact = upload["with"]["name"].replace("${{ matrix.name }}", name)
            file = upload["with"]["path"].replace("${{ matrix.name }}", name)
            assert file == f"report-{name}.json"
            assert fnmatch.fnmatch(artifact, download["pattern"])
            assert fnmatch.fnmatch(f"{download['path']}/{file}", glob)


def test_the_hosted_jobs_are_the_ones_the_manifests_declare(workflow):
    stacks = workflow["jobs"]["stacks"]["strategy"]["matrix"]["include"]
    keys = ("name", "runner", "install", "ports", "flags")
    found = [{key: " ".join(str(entry[key]).split()) for key in keys} for entry in stacks]
    assert found == ci_jobs()


def test_every_port_has_a_job_and_every_name_is_real(workflow):
    named = {port for entry in _entries(workflow) for port in entry["ports"].split()}
    stacks = workflow["jobs"]["stacks"]["strategy"]["matrix"]["include"]
    hosted = {port for entry in stacks for port in entry["ports"].split()}
    assert set(implementations.BUILTIN) <= hosted  # every port runs on every push
    assert named <= set(implementations.BUILTIN)


def test_every_extra_installed_exists(workflow):
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = set(pyproject["project"]["optional-dependencies"])
    for entry in _entries(workflow):
        (group,) = re.findall(r'-e "\.\[([^\]]*)\]"', entry["install"])
        assert set(group.split(",")) <= extras, entry["name"]
        assert "flax" in group.split(","), f"{entry['name']}: the canonical port needs flax"


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_run_scripts_are_valid_bash(workflow):
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                script = re.sub(r"\$\{\{[^}]*\}\}", "x", step["run"])
                done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
                assert done.returncode == 0, (step.get("name"), done.stderr)


def test_ci_md_shows_the_workflow_as_it_is():
    text = (ROOT / "docs" / "CI.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    assert block == WORKFLOW.read_text()


def test_the_lowest_versions_job_sweeps_every_extra_s_floors(workflow):
    from conformance.versions import project

    job = workflow["jobs"]["lowest-versions"]
    matrix = job["strategy"]["matrix"]
    assert job["strategy"]["fail-fast"] is False
    entries = [{"extra": e, "versions": "lowest"} for e in matrix["extra"]] + matrix["include"]
    extras = [entry["extra"] for entry in entries]
    assert sorted(extras) == sorted(project.sweepable())  # each once: a new extra joins here
    named = project.named_only()
    for entry in entries:
        sets = entry["versions"].split()
        assert all(word in ("lowest", "pin", "newest") or "==" in word for word in sets)
        floors = {r.name: r.specifier.removeprefix(">=") for r in
                  project.requirements(entry["extra"])}  # fmt: skip
        if set(floors) <= set(named):
            # Its lowest would be held at the pin (not run): the entry names the floor.
            version = project.packaging_lib().version.Version
            (word,) = sets
            pins = dict(pair.split("==") for pair in word.split(","))
            assert {k: version(v) for k, v in pins.items()} == {
                k: version(v) for k, v in floors.items()
            }, entry
    sweep = _step(job, name="Version sweep")
    assert sweep["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    assert 'python -m conformance versions "$EXTRA" --versions "${sets[@]}"' in sweep["run"]
    assert "--remove" in sweep["run"]
    upload = _step(job, uses="actions/upload-artifact@")
    assert "!cancelled()" in upload["if"]
    assert "lowest-versions" not in workflow["jobs"]["merge"]["needs"]  # run reports only
