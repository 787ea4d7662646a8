"""Outputs in a hostile world (issue 61, cases 5, 6 and 7): a full disk leaves the old file or
none and keeps the verdict's code; an output never replaces an input, never shares a path
with another output, never writes through a symlink; the report's Markdown escapes HTML.

A full disk is /dev/full (every write fails with ENOSPC), or ENOSPC injected into the one
helper every writer goes through (`conformance.outputs`)."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import outputs
from conformance.page import build, csv_files
from conformance.running import environment, suite
from tests.core.merge.test_forged_reports import _written
from tests.support.helpers import run_cli

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
#: The cheapest real run: one numpy port, one property, one example.
TINY_RUN = ["run", "--implementation", "hips_autograd", "--property", "g", "--examples", "1"]
TINY_RUN += ["--no-mutants", "--profile", "dev", "--jobs", "1"]


@pytest.fixture
def report(tmp_path) -> Path:
    path = tmp_path / "in.json"
    path.write_text(json.dumps(_written()), encoding="utf-8")
    return path


def _no_space(*_args):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


# Case 5: a full disk.
@needs_dev_full
def test_merge_markdown_on_a_full_disk_names_the_file_and_keeps_the_verdict(report):
    done = run_cli("merge", str(report), "--markdown", str(FULL))
    assert done.returncode == 0, done.stderr  # the verdict: passed
    assert "None" not in done.stderr
    assert "--markdown: cannot write /dev/full: No space left on device" in done.stderr
    assert "the verdict stands: passed (exit 0)" in done.stderr
    assert "#1" in done.stdout  # the matrix is still shown


@needs_dev_full
def test_report_on_a_full_disk_is_an_error_naming_the_flag_not_a_traceback(report):
    done = run_cli("report", str(report), "--out", str(FULL), "--no-pictures")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--out /dev/full: cannot write it: No space left on device" in done.stderr


@needs_dev_full
def test_run_json_to_a_full_stdout_says_so_and_its_side_output_keeps_the_verdict(tmp_path):
    env = {**os.environ, "COLUMNS": "200"}
    with FULL.open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "conformance", *TINY_RUN, "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
            env=env,
        )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "cannot write the report to stdout: No space left on device" in done.stderr
    assert "the run passed" in done.stderr

    done = run_cli(*TINY_RUN, "--markdown", str(FULL), "--csv", str(tmp_path / "run.csv"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--markdown: cannot write /dev/full" in done.stderr
    assert "the verdict stands: passed (exit 0)" in done.stderr
    assert (tmp_path / "run.csv").read_text(encoding="utf-8").startswith("port,")


def _durations(path: Path) -> None:
    suite._keep_durations([])


def _csv(path: Path) -> None:  # run --csv
    csv_files.write_run(path, _written())


def _page(path: Path) -> None:  # report --out
    build([_written()], html_path=path, pictures=False)


@pytest.mark.parametrize("write", [_durations, _csv, _page], ids=["durations", "csv", "page"])
def test_a_full_disk_mid_write_leaves_the_old_file_and_no_stray_one(tmp_path, monkeypatch, write):
    monkeypatch.setattr(environment, "cache_root", lambda: tmp_path)
    path = tmp_path / "durations.json"
    path.write_text('{"old": 1.0}', encoding="utf-8")
    write(path)  # it can write here: the file is replaced whole
    replaced = path.read_text(encoding="utf-8")
    assert replaced != '{"old": 1.0}'
    monkeypatch.setattr(outputs.os, "fsync", _no_space)  # the disk is full from now on
    if write is _durations:
        write(path)  # a cache file: its failure is kept quiet, never the run's
    else:
        with pytest.raises((OSError, ValueError), match="No space left"):  # page: names --out
            write(path)
    assert path.read_text(encoding="utf-8") == replaced  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["durations.json"]  # no temporary left


def test_an_output_keeps_the_mode_a_plain_write_would_give(tmp_path):
    outputs.write_text(tmp_path / "a.txt", "a")
    (tmp_path / "b.txt").write_text("b")
    assert (tmp_path / "a.txt").stat().st_mode == (tmp_path / "b.txt").stat().st_mode


# Case 6: outputs over inputs, over each other, through symlinks.
@pytest.mark.parametrize("command", ["report", "merge"])
def test_an_output_never_replaces_an_input(report, command):
    before = report.read_bytes()
    done = run_cli(command, str(report), "--out", str(report))
    assert done.returncode == 2
    assert "error: --out: " in done.stderr
    assert "is one of this command's inputs" in done.stderr
    assert report.read_bytes() == before


def test_two_outputs_never_share_a_path(report, tmp_path):
    same = str(tmp_path / "same")
    done = run_cli("report", str(report), "--out", same, "--markdown", same, "--no-pictures")
    assert done.returncode == 2
    assert "error: --markdown: " in done.stderr
    assert "also --out's path" in done.stderr
    assert not Path(same).exists()
    done = run_cli("merge", str(report), "--out", same, "--markdown", same)
    assert done.returncode == 2
    assert "also --markdown's path" in done.stderr
    done = run_cli(*TINY_RUN, "--markdown", same, "--csv", same)
    assert done.returncode == 2
    assert "error: --csv: " in done.stderr


def test_an_output_that_is_a_symlink_is_refused_never_followed(report, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "precious.html"
    target.write_text("precious", encoding="utf-8")
    link = tmp_path / "page.html"
    link.symlink_to(target)
    for command, flag in (("report", "--no-pictures"), ("merge", "--json")):
        done = run_cli(command, str(report), "--out", str(link), flag)
        assert done.returncode == 2, (command, done.stderr)
        assert "error: --out: " in done.stderr
        assert "is a symlink" in done.stderr
    assert target.read_text(encoding="utf-8") == "precious"


def test_a_pictures_directory_that_is_a_symlink_is_refused(report, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "page-pictures").symlink_to(elsewhere)
    with pytest.raises(ValueError, match=r"--markdown's pictures: .* is a symlink"):
        build([report], markdown_path=tmp_path / "page.md", pictures=False)
    assert not (tmp_path / "page.md").exists()
    assert list(elsewhere.iterdir()) == []


# Case 7: the report's Markdown escapes what the page escapes.
def test_report_markdown_escapes_html_from_the_data(tmp_path):
    data = _written()
    hostile = "<script>alert(1)</script><iframe src=x></iframe><img src=x onerror=y></details>"
    data["ports"][0]["name"] = hostile
    data["ports"][0]["outcomes"][0].update(status="fail", message=hostile, reproduce="b")
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    made = build([path], markdown_path=tmp_path / "page.md", pictures=False)
    text = (tmp_path / "page.md").read_text(encoding="utf-8")
    assert made.markdown_path == tmp_path / "page.md"
    assert "&lt;script&gt;" in text  # the data is there, escaped
    for raw in ("<script", "<iframe", "<img"):
        assert raw not in text, raw
    assert text.count("</details>") == text.count("<details")  # none closed by the data


#: Writes that are not outputs a user keeps, and why they need not be atomic.
NOT_OUTPUTS = {
    "conformance/outputs.py": "the helper itself",
    "conformance/commands/arguments.py": "a probe that a path is writable: it writes nothing",
    "conformance/running/scratch.py": "the run's scratch directory's owner record",
    "conformance/running/isolation.py": "a worker's captured output, in the run's scratch",
    "conformance/comparison/measure.py": "inputs for the first-call children, in a scratch dir",
    "conformance/commands/report.py": "--make's child writes into the scratch directory",
    "conformance/versions/venvs.py": "a sweep's venv state and lock, rebuilt when unreadable",
    "conformance/versions/sweep.py": "a sweep child's report and log, in its own directory",
    "conformance/versions/probe.py": "a sweep child's own result, read back by the sweep",
}
_WRITES = re.compile(
    r"(?<!outputs)\.write_(text|bytes)\(|savefig\((?!temporary|buffer)"
    r"|np\.savez(_compressed)?\((?!file)|(?<!temporary\.)open\((?!temporary)[^)]*[\"'][wa]b?[\"']"
)


def test_every_file_the_project_writes_goes_through_outputs():
    root = Path(__file__).resolve().parents[3]
    found = []
    for path in sorted((root / "conformance").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _WRITES.search(line) and name not in NOT_OUTPUTS:
                found.append(f"{name}:{number}: {line.strip()}")
    assert not found, "writes not through conformance.outputs:\n" + "\n".join(found)
