""".ci/run: it installs chromium (the report's browser test) before the README's two test
commands, the fast tier's and then the full tier's.

Each case runs the real script in a copy of the repository whose README's test
command is `echo README-COMMAND` (its full test command `echo FULL-COMMAND`), with a PATH that
holds only the tools the script needs and stand-ins for `apt-get`, `id` and `chromium`: root with
apt installs, a non-root or apt-less machine says why not and goes on.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

TOOLS = ("bash", "sed", "grep", "dirname", "cat")
README = (
    "<!-- test-command -->\n```sh\necho README-COMMAND\n```\n<!-- /test-command -->\n"
    "<!-- full-test-command -->\n```sh\necho FULL-COMMAND\n```\n<!-- /full-test-command -->\n"
)


def _stub(directory, name: str, body: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def _run_ci(
    tmp_path, *, uid: int, apt: bool, chromium: bool, readme: str = README
) -> subprocess.CompletedProcess:
    repo, bin_dir = tmp_path / "repo", tmp_path / "bin"
    (repo / ".ci").mkdir(parents=True)
    bin_dir.mkdir()
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    (repo / "README.md").write_text(readme)
    for tool in TOOLS:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not on this machine")
        (bin_dir / tool).symlink_to(found)
    _stub(bin_dir, "id", f"echo {uid}")
    if apt:
        _stub(bin_dir, "apt-get", f'echo "apt-get $*" >> {tmp_path}/apt.log')
    if chromium:
        _stub(bin_dir, "chromium", "exit 0")
    return subprocess.run(
        [str(bin_dir / "bash"), str(repo / ".ci" / "run")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": str(bin_dir)},
    )


def test_as_root_with_apt_it_installs_chromium_before_the_readme_command(tmp_path):
    done = _run_ci(tmp_path, uid=0, apt=True, chromium=False)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "apt.log").read_text().splitlines()
    assert log[-1] == "apt-get install -y -qq chromium"
    out = done.stdout
    assert out.index("ci: apt-get install -y chromium") < out.index("README-COMMAND")


@pytest.mark.parametrize(
    ("uid", "apt", "reason"), [(1000, True, "not root"), (0, False, "no apt-get here")]
)
def test_without_root_or_apt_it_says_why_and_still_runs_the_tests(tmp_path, uid, apt, reason):
    done = _run_ci(tmp_path, uid=uid, apt=apt, chromium=False)
    assert done.returncode == 0, done.stderr
    assert reason in done.stderr
    assert "browser test will skip" in done.stderr
    assert "README-COMMAND" in done.stdout
    assert not (tmp_path / "apt.log").exists()


def test_an_installed_chromium_is_used_as_it_is(tmp_path):
    done = _run_ci(tmp_path, uid=0, apt=True, chromium=True)
    assert "chromium is installed" in done.stdout
    assert not (tmp_path / "apt.log").exists()


def test_it_runs_the_fast_tier_and_then_the_full_tier(tmp_path):
    done = _run_ci(tmp_path, uid=0, apt=True, chromium=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines.index("README-COMMAND") < lines.index("FULL-COMMAND")


def test_a_failing_fast_tier_ends_the_run_before_the_full_tier(tmp_path):
    readme = README.replace("echo README-COMMAND", "echo README-COMMAND; exit 1")
    done = _run_ci(tmp_path, uid=0, apt=True, chromium=True, readme=readme)
    assert done.returncode == 1
    assert "README-COMMAND" in done.stdout
    assert "FULL-COMMAND" not in done.stdout
    assert "test-command failed (exit 1)" in done.stderr


@pytest.mark.parametrize("tier", ["README-COMMAND", "FULL-COMMAND"])
def test_a_tier_that_collects_no_test_fails_the_run(tmp_path, tier):
    readme = README.replace(f"echo {tier}", f"echo {tier}; exit 5")
    done = _run_ci(tmp_path, uid=0, apt=True, chromium=True, readme=readme)
    assert done.returncode == 1
    assert "collected no tests; that is a failure" in done.stderr


def test_a_readme_without_the_full_test_command_is_an_error(tmp_path):
    readme = README.split("<!-- full-test-command -->")[0]
    done = _run_ci(tmp_path, uid=0, apt=True, chromium=True, readme=readme)
    assert done.returncode == 2
    assert "no command between <!-- full-test-command --> markers" in done.stderr
