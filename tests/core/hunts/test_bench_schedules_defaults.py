"""`bench --schedules` at its defaults (L = 1 to 64, B = 256, F = 64, every installed framework
that runs unnamed), as docs/SCHEDULES.md's table is made.

The fast tier runs each stack's schedules at small L (tests/*/test_*_schedules.py) and the
bench's own logic on a numpy stack (tests/core/benchmark/test_bench_schedules.py); this runs
the command a user runs, at the sizes where the peaks are activations, and holds its verdicts.
"""

from __future__ import annotations

import json

import pytest

from tests.support.helpers import run_cli

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(
        reason="201 s alone: every framework's schedules from L = 1 to 64, values to L = 16"
    ),
]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("schedules")
    # Minutes on an idle machine; a loaded one (the full tier's other worker) takes longer.
    done = run_cli("bench", "--schedules", "--out", str(out), "--plain", timeout=1800)
    written = out / "bench-schedules.json"
    return done, json.loads(written.read_text()) if written.exists() else None


def test_the_bench_ends_green_and_writes_its_results(bench):
    done, result = bench
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert result is not None, "no bench-schedules.json"
    assert result["failed"] == {}, result["failed"]
    assert result["settings"]["depths"][-1] == 64
    assert (result["settings"]["batch"], result["settings"]["features"]) == (256, 64)


def test_every_framework_that_declares_schedules_measured_them_at_the_deepest_depth(bench):
    _, result = bench
    assert result["schedules"], "no framework declared a schedule"
    deepest = max(result["settings"]["depths"])
    for framework, schedules in result["schedules"].items():
        measured = {
            row["schedule"]
            for row in result["results"]
            if row["framework"] == framework and row["depth"] == deepest
        }
        assert measured, f"{framework} declares {schedules} but measured none at L = {deepest}"


def test_every_cell_s_values_equal_the_canonical_s_where_they_were_checked(bench):
    _, result = bench
    checked = [row for row in result["results"] if row["values_within"] is not None]
    assert checked, "no schedule's values were checked against the canonical"
    wrong = [row for row in checked if not row["values_within"]]
    assert not wrong, [(r["framework"], r["schedule"], r["depth"]) for r in wrong]
    # checked at every depth to VALUES_DEPTH, every row deeper saying why
    from conformance.benchmark import schedules

    shallow = [row for row in result["results"] if row["depth"] <= schedules.VALUES_DEPTH]
    assert shallow
    assert all(row["values_within"] is not None for row in shallow)
    deep = [row for row in result["results"] if row["depth"] > schedules.VALUES_DEPTH]
    assert all(row["values_not_checked"] == schedules.values_too_deep() for row in deep)
