"""The command line: the report, exit codes, expectations, and a missing framework."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import implementations
from conformance.checking.properties import PROPERTIES
from conformance.running import expectations
from conformance.running.runner import Outcome
from tests.support.helpers import run_cli, without_frameworks

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

pytest.importorskip("flax")

QUICK = ["--no-mutants", "--examples", "3", "--jobs", "1", "--profile", "dev"]


_cli = run_cli


def test_run_json_reports_every_property_of_the_chosen_port():
    result = _cli("--implementation", "flax_linen", *QUICK, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    (port,) = report["ports"]
    assert port["name"] == "flax_linen"
    assert port["state"] == "available"
    statuses = {o["property"]: o["status"] for o in port["outcomes"]}
    assert len(statuses) == len(PROPERTIES)
    assert statuses["d_on_off"] == "pass"
    assert statuses["a_init"] == "reference"
    # The precision tier compares with the exact result: the canonical port is measured too.
    assert statuses["i_precision"] == "pass"
    assert report["failed"] is False
    assert report["mutants"] is None


def test_unknown_port_is_a_usage_error():
    result = _cli("--implementation", "nope", *QUICK)
    assert result.returncode == 2
    assert "flax_linen" in result.stderr


def test_a_missing_framework_is_reported_not_crashed(tmp_path):
    result = _cli(
        "--implementation", "pytorch", *QUICK, "--json", env=without_frameworks(tmp_path, ["torch"])
    )
    # Not a failure (1), and not a pass either: nothing was checked (5, issue 76).
    assert result.returncode == 5, result.stderr[-3000:]
    (port,) = json.loads(result.stdout)["ports"]
    assert port["state"] == "unavailable"
    assert "torch" in port["reason"]


@pytest.mark.slow(reason="11 s alone: imports every framework, some in processes of their own")
def test_list_import_names_every_port_its_state_and_why(tmp_path):
    # `list --import` loads every port (plain `list` imports none, and calls torch shadowed by
    # a package that fails on import "found": tests/core/commands/test_usage.py).
    result = _cli("list", "--import", env=without_frameworks(tmp_path, ["torch"]))
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert " available " in lines["flax_linen"]
    assert " unavailable " in lines["pytorch"]
    reason = lines["pytorch"].split(" unavailable ", 1)[1]
    assert "torch" in reason
    assert implementations.install_command("torch") in reason  # what installs it, as installed


def test_a_stale_expectation_is_reported(tmp_path):
    (tmp_path / "flax_linen.txt").write_text("# stale on purpose\nd  was broken once\nz  no such\n")
    run = ["--implementation", "flax_linen", "--property", "d", *QUICK]
    result = _cli(*run, "--expectations", str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    output = " ".join(result.stdout.split())  # rich wraps long lines
    assert "xpass" in output
    assert "remove it" in output
    assert "no property 'z'" in output


def test_expectations_turn_a_listed_failure_into_xfail():
    found = expectations.parse("p", "c_vjp  known\n# comment\n\nh\n")
    assert found.expected == {"c_vjp": "known", "h_hygiene": "no reason given"}
    failed = found.apply(Outcome("p", "c_vjp", "fail", message="boom"))
    assert failed.status == "xfail"
    assert "known" in failed.message
    passed = found.apply(Outcome("p", "h_hygiene", "pass"))
    assert passed.status == "xpass"
    assert found.warnings
    untouched = found.apply(Outcome("p", "b_forward", "fail"))
    assert untouched.status == "fail"


def test_without_a_directory_no_failure_is_expected_and_a_missing_file_expects_none(tmp_path):
    (tmp_path / "flax_linen.txt").write_text("c_vjp  known\n")
    assert expectations.load("flax_linen", tmp_path).expected == {"c_vjp": "known"}
    assert expectations.load("flax_linen").expected == {}
    assert expectations.load("pytorch", tmp_path).expected == {}


def test_the_plugin_marks_expected_failures_and_warns_about_stale_ones(tmp_path):
    (tmp_path / "flax_linen.txt").write_text("d  was broken once\n")
    command = [sys.executable, "-m", "pytest", "tests/core/running/test_conformance.py", "-q"]
    command += ["-p", "no:cacheprovider", "-k", "flax_linen and on_off"]
    command += ["--expectations", str(tmp_path), "-W", "default"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "StaleExpectationWarning" in result.stdout
    assert "1 passed" in result.stdout
