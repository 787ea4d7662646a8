"""`report` takes every kind of result the project writes (`tables.reports.KINDS`), pictures
included, and `--make` has a choice for each.

The examples are recorded results: tests/data/report's (see test_report.py), the committed
docs/bench-schedules.json (its JAX rows to L = 8: its seven frameworks' picture takes 15 s to
draw here, one takes 2), and a version sweep's JSON made in-process (no venv)."""

from __future__ import annotations

import base64
import json
import re

import pytest

from conformance import cli
from conformance.checking import policy_expectations
from conformance.commands import report as command
from conformance.page import build
from conformance.tables.reports import KINDS
from conformance.versions import plan, summary
from conformance.versions.sweep import Options, SetResult, Sweep
from tests.support.helpers import ROOT

DATA = ROOT / "tests" / "data" / "report"
PNG = b"\x89PNG\r\n\x1a\n"


def _sweep_json() -> dict:
    """A version sweep's JSON as `versions --out` writes it: one set, one degradation probed."""
    swept = plan.make("tensorflow", ["pin"], ["tensorflow"])
    (documented,) = [d for d in policy_expectations.all_degradations() if d.family == "tensorflow"]
    result = SetResult(
        plan.VersionSet(["pin"], {"tensorflow-cpu": "2.21.0"}),
        state="ran",
        degradations={"tensorflow:full": {"holds": True, "seen": "seen"}},
    )
    return summary.to_json(Sweep(swept, Options(policies=False), [result], [documented]))


def _schedules_json() -> dict:
    data = json.loads((ROOT / "docs" / "bench-schedules.json").read_text())
    data["results"] = [r for r in data["results"] if r["framework"] == "jax" and r["depth"] <= 8]
    assert data["results"]
    return data


#: kind -> (an example of it: a file, or a function that makes its JSON; its pictures)
EXAMPLES = {
    "run": (DATA / "run.json", 0),
    "compare": (DATA / "compare.json", 3),
    "bench": (DATA / "bench.json", 1),
    "bench-policies": (DATA / "bench-policies.json", 1),
    "bench-schedules": (_schedules_json, 1),
    "scale": (DATA / "scale.json", 1),
    "versions": (_sweep_json, 0),
}


def test_every_kind_the_project_writes_has_an_example_here():
    assert set(EXAMPLES) == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_the_command_renders_every_kind_with_its_pictures(kind, tmp_path):
    pytest.importorskip("matplotlib")
    path, pictures = EXAMPLES[kind]
    if callable(path):
        made, path = path(), tmp_path / f"{kind}.json"
        path.write_text(json.dumps(made))
    out = tmp_path / "r.html"
    assert cli.main(["report", str(path), "--out", str(out)]) == 0
    page = out.read_text()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == pictures
    assert all(base64.b64decode(image)[:8] == PNG for image in images)
    assert f"{kind} ({path.name})" in page  # the page names what it was made of


def test_a_schedules_report_that_measured_nothing_says_so_instead_of_a_picture():
    pytest.importorskip("matplotlib")
    from conformance.benchmark import schedules
    from conformance.benchmark.measure import Settings

    empty = schedules.report_data(Settings(depths=(1,)), {}, [], {})
    page = build([empty]).html
    assert "data:image/png" not in page
    assert "picture left out: no schedule was measured" in page


def test_make_has_a_choice_for_every_kind_and_each_makes_that_kind(tmp_path):
    assert sorted(command.MAKES.values()) == sorted(KINDS)
    args = cli.parser().parse_args(["report", "--make", "schedules"])
    words, path = command.make_command("schedules", args, tmp_path)
    assert words[3:5] == ["bench", "--schedules"]
    assert path == tmp_path / "schedules" / "bench-schedules.json"
    assert words[words.index("--depths") + 1 :][:4] == ["1", "2", "4", "8"]
    assert words[words.index("--out") + 1] == str(tmp_path / "schedules")
    args = cli.parser().parse_args(
        ["report", "--make", "versions", "--versions-extra", "equinox", "--port", "equinox_jax"]
    )
    words, path = command.make_command("versions", args, tmp_path)
    assert words[3:5] == ["versions", "equinox"]
    assert words[words.index("--versions") + 1 :][:2] == ["lowest", "pin"]
    assert words[words.index("--implementation") + 1] == "equinox_jax"
    assert words[-2:] == ["--out", str(tmp_path / "versions.json")]
    assert path == tmp_path / "versions.json"


def test_make_versions_refuses_an_unknown_extra_in_one_line_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["report", "--make", "versions", "--versions-extra", "jaxx"])
    assert exit_info.value.code == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert said[-1].startswith("python -m conformance report: error: --versions-extra: 'jaxx' is")
    assert "did you mean 'jax'?" in said[-1]


def test_the_schedules_picture_is_the_same_drawing_as_a_file_and_as_the_page_s_bytes(tmp_path):
    pytest.importorskip("matplotlib")
    from conformance.benchmark import schedule_plot

    data = _schedules_json()
    assert schedule_plot.plot(data, tmp_path / "bench-schedules.png") is None
    written = (tmp_path / "bench-schedules.png").read_bytes()
    assert written[:8] == PNG
    inline = schedule_plot.png(data)
    assert inline[:8] == PNG
    assert inline[16:24] == written[16:24]  # the same width and height
    empty = {**data, "results": []}
    assert schedule_plot.plot(empty, tmp_path / "none.png") == "no schedule was measured"
    assert not (tmp_path / "none.png").exists()
