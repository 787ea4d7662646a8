"""One real version sweep: JAX at the lowest version the `jax` extra allows and at the pin, on
jax_checkpoint, each installed with pip into a venv of its own under the test's cache and run
there; then its reports merged and its JSON made a page.

The venvs stay in the cache (`$REMAT_CACHE/versions/`), so a second run of the test reuses
them and pays only for the two runs; from a fresh clone each is installed first, from the
registry. Measured on this 2-core machine, shared with another engineer's timing runs (load
about 3): 80 to 94 s from an empty cache (about 70 s of CPU: two pip installs, the second
made while the first set runs, two suite runs at 2 examples, two policy probes), 20 to 23 s
with the venvs there; 226 s from an empty cache on 2026-12-07 (load 9 to 13, 63 s of CPU),
the figure its `slow` mark gives. A CI may keep `$REMAT_CACHE/versions/` between runs: each
venv's name holds a hash of the interpreter, the requirements and the constraints, so a kept
venv is reused only where the same install would be made again, and a changed pin installs
anew.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conformance import merge
from conformance.page import build
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out), and goes to the full tier: the
#: fast tier sweeps the installed versions, with no install (test_versions_installed.py).
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="46 s alone (226 s on a loaded machine): installs two venvs with pip"),
]

pytest.importorskip("jax")  # pip itself comes from the test's interpreter

SWEEP = [
    "versions", "jax", "--versions", "lowest", "pin", "--implementation", "jax_checkpoint",
    "--examples", "2", "--no-mutants",
]  # fmt: skip


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    directory = tmp_path_factory.mktemp("sweep")
    out, reports = directory / "sweep.json", directory / "reports"
    command = [sys.executable, "-m", "conformance", *SWEEP, "--out", str(out)]
    command += ["--reports", str(reports), "--plain"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=1500, cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    return done, json.loads(out.read_text()), reports


def test_the_sweep_installs_and_runs_both_versions_and_every_property_passes(swept):
    done, data, _ = swept
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lowest, pin = data["sets"]
    assert (lowest["labels"], lowest["pins"]) == (["lowest"], {"jax": "0.7.0", "jaxlib": "0.7.0"})
    assert "pin" in pin["labels"]
    for found in (lowest, pin):
        assert found["state"] == "ran", found
        assert not found["failed"], found
        assert found["installed"]["jax"] == found["pins"]["jax"]
    # flax 0.12.8 (the canonical's pin) needs jax >= 0.10: released at 0.7.0, and said so.
    assert lowest["released"] == {"flax": "0.12.8"}
    assert pin["released"] == {}
    rows = {(row["set"], row["port"]): row for row in data["rows"]}
    assert set(rows) == {(0, "jax_checkpoint"), (1, "jax_checkpoint")}
    for (index, _), row in rows.items():
        assert row["versions"]["jax"] == data["sets"][index]["pins"]["jax"]
        statuses = {key: o["status"] for key, o in row["outcomes"].items()}
        assert set(statuses) == set(data["properties"])
        assert set(statuses.values()) == {"pass"}
        # jax 0.7.0 spells the offload's memory space only in its device_put: read there.
        marks = {policy: cell["mark"] for policy, cell in row["policies"].items()}
        assert marks == {**dict.fromkeys(data["policies"], "pass"), "budget": "inexpressible"}


def test_the_sweep_shows_progress_and_one_matrix(swept):
    done, _data, _ = swept
    assert "versions: [1/2] lowest · jax 0.7.0, jaxlib 0.7.0: running the suite" in done.stderr
    assert "versions: [2/2] pin" in done.stderr
    out = done.stdout
    assert "remat-conformance versions · extra jax · 2 version sets" in out
    assert out.index("lowest · jax 0.7.0, jaxlib 0.7.0") < out.index("pin") < out.index("(a) init")
    assert "pins released: flax==0.12.8" in out


def test_merge_groups_the_sweep_s_reports_by_versions(swept):
    _, _, reports = swept
    merged = merge.combine(merge.read_all(sorted(reports.glob("*.json"))))
    assert [(g.versions, [r.port for r in g.rows]) for g in merged.groups] == [
        ("V1", ["jax_checkpoint"]),
        ("V2", ["jax_checkpoint"]),
    ]
    assert {v["jax"] for v in merged.versions.values()} == {"0.7.0", "0.10.2"}
    assert merged.conflicts == []
    assert "M1 · V1 · cpu" in merge.markdown(merged)


def test_report_has_the_sweep_s_versions_section(swept, tmp_path):
    _, data, reports = swept
    page = build([data, *sorted(reports.glob("*.json"))], pictures=False)
    titles = [section.title for section in page.sections]
    # The versions' matrix first, after the runs' one-row-a-port summary ("At a glance").
    assert titles[: titles.index("Versions")] in ([], ["At a glance"])
    assert "Versions of the runs" in titles
    (matrix, *_) = page.sections[titles.index("Versions")].tables
    assert matrix.keys == ["0-jax_checkpoint", "1-jax_checkpoint"]
    assert 'data-key="1-jax_checkpoint"' in page.html
