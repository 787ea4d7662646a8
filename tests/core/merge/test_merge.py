"""`merge`: reports from a real run, edited into other machines, subsets, a failure, a conflict."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import merge
from conformance.checking.properties import PROPERTIES
from conformance.running.suite import SCHEMA
from tests.support.helpers import run_cli

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

pytest.importorskip("flax")
pytest.importorskip("torch")

# Three properties are enough to merge and tell apart; each more runs on both ports.
QUICK = [
    *("--examples", "2", "--no-mutants", "--profile", "dev", "--jobs", "1"),
    *("--property", "a", "b", "c"),
]
MAC = {
    "system": "Darwin",
    "os": "macOS 14.5",
    "architecture": "arm64",
    "cpu": "Apple M2",
    "cores": 8,
    "memory_bytes": 16 * 2**30,
    "python": "3.12.4",
}
METAL = {"kind": "gpu", "name": "Apple M2", "api": "metal", "framework": "torch"}


_cli = run_cli


@pytest.fixture(scope="module")
def run_report(tmp_path_factory) -> tuple[dict, Path]:
    """One real run of two cheap ports: its JSON, and the Markdown `run --markdown` wrote."""
    directory = tmp_path_factory.mktemp("run")
    markdown = directory / "run.md"
    ports = ["--implementation", "jax_checkpoint", "--implementation", "pytorch"]
    result = _cli(*ports, *QUICK, "--json", "--markdown", str(markdown))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout), markdown


def _on_cpu(report: dict) -> dict:
    """The report with each port's device as its worker records it (kept if already there)."""
    report = copy.deepcopy(report)
    for port in report["ports"]:
        device = {"kind": "cpu", "name": "cpu", "framework": port["framework"]}
        port.setdefault("environment", {"device": device, "frameworks": {}, "precision": {}})
    return report


def _only(report: dict, *names: str) -> dict:
    report = copy.deepcopy(report)
    report["ports"] = [p for p in report["ports"] if p["name"] in names]
    return report


def _failing(report: dict, port: str, prop: str) -> dict:
    report = copy.deepcopy(report)
    (entry,) = [p for p in report["ports"] if p["name"] == port]
    (outcome,) = [o for o in entry["outcomes"] if o["property"] == prop]
    outcome.update(status="fail", examples=1, message="VJP differs | by 3 ulp\nthe rest")
    outcome["replay"] = f"python -m conformance run --implementation {port} --property {prop}"
    report["failed"] = True
    return report


@pytest.fixture(scope="module")
def reports(run_report, tmp_path_factory) -> dict[str, Path]:
    """The run's report, and copies edited into the cases merge must tell apart."""
    base = _on_cpu(run_report[0])
    mac = _only(base, "pytorch")
    mac["machine"] = {**base["machine"], **MAC}
    mac["ports"][0]["environment"]["device"] = METAL
    cases = {
        "linux": base,
        "mac": mac,
        "failed": _failing(_only(base, "jax_checkpoint"), "jax_checkpoint", "c_vjp"),
    }
    directory = tmp_path_factory.mktemp("reports")
    paths = {}
    for name, data in cases.items():
        paths[name] = directory / f"report-{name}.json"
        paths[name].write_text(json.dumps(data))
    return paths


def _rows(merged: dict) -> list[tuple[str, str, str, int, list[str]]]:
    return [
        (group["machine"], group["device"], row["port"], row["report"], row["conflict"])
        for group in merged["groups"]
        for row in group["rows"]
    ]


def test_run_json_records_the_machine(run_report):
    data, _ = run_report
    assert data["schema"] == SCHEMA
    fields = data["machine"]
    assert isinstance(fields["cpu"], str)
    assert fields["cpu"]
    assert isinstance(fields["cores"], int)
    assert isinstance(fields["python"], str)


def test_run_markdown_is_the_matrix_merge_writes(run_report, tmp_path):
    data, markdown = run_report
    path = tmp_path / "one.json"
    path.write_text(json.dumps(data))
    merged = tmp_path / "merged.md"
    result = _cli("merge", str(path), "--markdown", str(merged))
    assert result.returncode == 0, result.stderr

    def table(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith("|")]

    written = markdown.read_text()
    assert table(written) == table(merged.read_text())
    assert "profile dev · 2 examples per property" in written
    assert any(line.startswith("| jax_checkpoint<br>jax · #1 | ✓2") for line in table(written))


def test_two_machines_two_subsets_pass(reports):
    result = _cli("merge", str(reports["linux"]), str(reports["mac"]), "--json")
    assert result.returncode == 0, result.stderr
    merged = json.loads(result.stdout)
    assert merged["failed"] is False
    assert merged["conflicts"] == []
    assert set(merged["machines"]) == {"M1", "M2"}
    assert merged["machines"]["M2"]["fields"]["cpu"] == "Apple M2"
    description = merged["machines"]["M2"]["description"]
    assert description == "macOS 14.5 arm64 · Apple M2 · 8 cores · 16 GiB · Python 3.12.4"
    assert _rows(merged) == [
        ("M1", "cpu", "jax_checkpoint", 1, []),
        ("M1", "cpu", "pytorch", 1, []),
        ("M2", "gpu Apple M2", "pytorch", 2, []),
    ]
    assert [r["ports"] for r in merged["reports"]] == [["jax_checkpoint", "pytorch"], ["pytorch"]]
    cells = merged["groups"][1]["rows"][0]["outcomes"]
    assert cells["b_forward"]["status"] == "pass"
    assert cells["b_forward"]["examples"] == 2


def test_a_failed_report_fails_the_merge_and_its_conflict_is_shown(reports, tmp_path):
    out, markdown = tmp_path / "merged.json", tmp_path / "summary.md"
    paths = [str(reports[name]) for name in ("linux", "mac", "failed")]
    result = _cli("merge", *paths, "--out", str(out), "--markdown", str(markdown))
    assert result.returncode == 1, result.stderr

    merged = json.loads(out.read_text())
    assert merged["failed"] is True
    assert [r["failed"] for r in merged["reports"]] == [False, False, True]
    # The same port, machine and device in two reports: both rows, next to each other.
    assert _rows(merged) == [
        ("M1", "cpu", "jax_checkpoint", 1, ["c_vjp"]),
        ("M1", "cpu", "jax_checkpoint", 3, ["c_vjp"]),
        ("M1", "cpu", "pytorch", 1, []),
        ("M2", "gpu Apple M2", "pytorch", 2, []),
    ]
    assert merged["conflicts"] == [
        {"port": "jax_checkpoint", "group": "M1 · cpu", "differs": ["c_vjp"], "reports": [1, 3]}
    ]

    text = markdown.read_text()
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[2] == "| **M1 · cpu** |" + " |" * (len(PROPERTIES) + 1)
    assert table[3].startswith("| ⚠ jax_checkpoint<br>jax · #1 | ✓2<br>0 | ✓2<br>0 | ✓2<br>")
    assert table[4].startswith("| ⚠ jax_checkpoint<br>jax · #3 | ✓2<br>0 | ✓2<br>0 | ✗fail")
    assert "| ✗fail<br>@1 |" in table[4]
    assert table[6] == "| **M2 · gpu Apple M2** |" + " |" * (len(PROPERTIES) + 1)
    assert "- ⚠ jax_checkpoint on M1 · cpu: c_vjp: pass in #1, fail in #3" in text
    # The failure's first line (its "|" escaped for the table syntax) and its replay command.
    assert "#3 jax_checkpoint · c_vjp: fail: VJP differs \\| by 3 ulp (replay: python -m" in text
    assert "the rest" not in text
    assert "\n- #3 " in text
    assert "): failed\n" in text

    terminal = _cli("merge", *paths)
    assert terminal.returncode == 1
    assert "M2 · gpu Apple M2" in terminal.stdout
    assert "⚠ jax_checkpoint" in terminal.stdout
    assert "⚠ jax_checkpoint on M1 · cpu: c_vjp: pass in #1, fail in #3" in terminal.stdout
    assert "✗fail" in terminal.stdout


def test_reports_without_a_device_are_grouped_apart(run_report, tmp_path):
    data = copy.deepcopy(run_report[0])
    for port in data["ports"]:
        port.pop("environment", None)
    data["ports"].append({**data["ports"][0], "name": "gone", "state": "unavailable"})
    merged = merge.combine([merge.Source(1, "a.json", data)])
    devices = [(g.device, [r.port for r in g.rows]) for g in merged.groups]
    assert devices == [
        ("device not recorded", ["jax_checkpoint", "pytorch"]),
        ("not loaded", ["gone"]),
    ]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(schema=SCHEMA + 1), f"schema {SCHEMA + 1} is newer than"),
        (lambda d: d.pop("schema"), "no schema version"),
        (lambda d: d.update(schema=1), "schema 1 is older than"),
        (lambda d: d.update(schema="2"), "schema must be an integer"),
        (lambda d: d.pop("failed"), "'failed' must be true or false"),
        (lambda d: d["ports"][0].pop("outcomes"), "'outcomes' must be a list"),
    ],
)
def test_a_report_merge_cannot_trust_is_refused_by_name(run_report, tmp_path, edit, message):
    data = copy.deepcopy(run_report[0])
    edit(data)
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(data))
    with pytest.raises(merge.ReportError, match=r"odd\.json") as error:
        merge.read(path)
    assert message in str(error.value)


def test_unreadable_files_are_usage_errors(run_report, tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(run_report[0]))
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": 2,')
    future = tmp_path / "future.json"
    future.write_text(json.dumps({**run_report[0], "schema": SCHEMA + 1}))
    merged = tmp_path / "merged.json"
    assert _cli("merge", str(good), "--out", str(merged)).returncode == 0

    for path, message in [
        (broken, "broken.json: not JSON"),
        (future, f"future.json: schema {SCHEMA + 1} is newer than this remat-conformance"),
        (tmp_path / "missing.json", "missing.json: cannot read it"),
        (merged, "merged.json: a merged matrix"),
    ]:
        result = _cli("merge", str(good), str(path))
        assert result.returncode == 2, (path, result.stdout)
        assert message in result.stderr
        assert result.stdout == ""


def test_run_markdown_needs_a_directory(tmp_path):
    result = _cli("--implementation", "pytorch", *QUICK, "--markdown", str(tmp_path / "no/x.md"))
    assert result.returncode == 2
    assert "--markdown" in result.stderr


def test_every_field_of_the_report_is_documented(run_report):
    import dataclasses

    from conformance.running.mutation import MutantResult
    from tests.support.helpers import ROOT

    data = _on_cpu(_failing(run_report[0], "pytorch", "c_vjp"))  # a failure has `replay`
    port = data["ports"][1]
    fields = {
        "top level": set(data) | {"mutation_score"},
        "machine": set(data["machine"]),
        "ports": set(port),
        "outcomes": {key for outcome in port["outcomes"] for key in outcome},
        "mutants": {f.name for f in dataclasses.fields(MutantResult)},
    }
    text = (ROOT / "docs" / "REPORT.md").read_text()
    for section, keys in fields.items():
        missing = sorted(key for key in keys if f"| `{key}` |" not in text)
        assert not missing, (section, missing)


def test_merge_needs_no_framework(reports, tmp_path):
    from tests.support.helpers import without_frameworks

    env = {**without_frameworks(tmp_path, ["jax", "torch", "flax", "equinox"]), "COLUMNS": "200"}
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "merge", str(reports["linux"]), str(reports["mac"])],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "M2 · gpu Apple M2" in result.stdout
