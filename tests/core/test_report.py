"""`python -m conformance report`, the pictures and the CSV, from recorded JSON reports.

tests/data/report holds one report of each kind, made once on this machine:
`run --profile dev --json` and `compare --dim 32 --features 16 --no-first-call
--json` on flax_linen, pytorch and tensorflow; `bench --framework jax
--framework torch --depths 1 2 4 --batch 128 --features 32 --repeats 5
--max-repeats 10`. The browser test opens the page in headless Chromium.
"""

from __future__ import annotations

import base64
import csv
import json
import re

import pytest

from conformance import cli
from conformance.page import DocumentError, build, csv_files, documents, pictures, tables
from tests import browser
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data" / "report"
RUN, COMPARE, BENCH = (DATA / f"{kind}.json" for kind in ("run", "compare", "bench"))
PNG = b"\x89PNG\r\n\x1a\n"


def _load(path):
    return json.loads(path.read_text())


def _ports(path) -> list[str]:
    return [p["name"] for p in _load(path)["ports"]]


def test_each_recorded_report_is_told_by_its_kind():
    assert [documents.read(p).kind for p in (RUN, COMPARE, BENCH)] == ["run", "compare", "bench"]


def test_an_unknown_report_is_refused_naming_the_file(tmp_path):
    merged = tmp_path / "merged.json"
    merged.write_text(json.dumps({"groups": [], "reports": []}))
    with pytest.raises(DocumentError, match=r"merged\.json: not a run, compare or bench .*merge"):
        documents.read(merged)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(DocumentError, match=r"broken\.json: not JSON"):
        documents.read(broken)
    with pytest.raises(DocumentError, match=r"missing\.json: cannot read it"):
        documents.read(tmp_path / "missing.json")


def test_a_matrix_cell_says_pass_in_words_with_examples_and_worst_ratio():
    cell = tables.outcome_cell({"status": "pass", "examples": 62, "worst_ratio": 0.25})
    assert cell == "✓ pass · 62 ex · worst 0.250"
    failed = tables.outcome_cell({"status": "fail", "examples": 7, "worst_ratio": None})
    assert failed == "✗ fail · 7 at example"
    assert tables.outcome_cell({"status": "reference", "examples": 0}) == "ref"


def test_the_compare_verdict_names_what_is_over_its_bound():
    row = {
        "name": "p",
        "state": "available",
        "output": {"max_abs": 2e-5, "bound": 1e-5, "worst_ratio": 2.0},
        "exercise": {"max_abs": 0.0, "bound": 1e-5, "worst_ratio": 0.0},
        "gradients": {"w1": {"max_abs": 1e-7, "bound": 1e-5, "worst_ratio": 0.01}},
        "precision": {"w1": {"bits": 10.6, "ratio": 3.0}, "output": {"bits": 22, "ratio": 0.1}},
    }
    assert tables.compare_verdict(row) == "✗ over the bound: output; precision tier: w1"
    row["output"]["worst_ratio"] = 0.5
    row["precision"]["w1"]["ratio"] = 0.2
    assert tables.compare_verdict(row).startswith("✓")


def test_the_strip_counts_saved_roles_and_rerun_ops_by_kind():
    # TensorFlow's recompute_grad reruns the whole block: both matmuls, both bias adds.
    row = {
        "residuals": {
            "on": {
                "saved": [
                    {"origin": "input", "dtype": "float32"},
                    {"origin": "parameter", "dtype": "float32"},  # lives anyway: not shown
                ],
                "recomputed": {"MatMul": 2, "BiasAdd": 2, "Relu": 1},
            }
        }
    }
    found = pictures.strip_counts(row)
    assert found["input x"] == 1
    assert found["activations"] == found["bool masks"] == found["constants"] == 0
    assert (found["matmul"], found["add / bias"], found["relu"], found["other"]) == (2, 2, 1, 0)
    jax = {"residuals": {"on": {"saved": [], "recomputed": {"dot_general": 1, "gt": 1}}}}
    assert pictures.strip_counts(jax)["matmul"] == 1
    assert pictures.strip_counts(jax)["relu"] == 1


def test_engines_group_keras_ports_by_their_backend():
    assert pictures.engine({"name": "keras_torch", "framework": "keras"}) == "torch"
    assert pictures.engine({"name": "haiku", "framework": "dm-haiku"}) == "jax"
    assert pictures.engine({"name": "tensorflow", "framework": "tensorflow"}) == "tensorflow"


def test_warm_times_give_quartiles_from_samples_and_a_bare_median_otherwise():
    assert pictures.warm_vjp({"warm_vjp_samples": [4.0, 1.0, 3.0, 2.0, 5.0]}) == (
        3.0,
        1.5,  # statistics.quantiles, exclusive: positions 1.5 and 4.5 of 1..5
        4.5,
    )
    assert pictures.warm_vjp({"warm_vjp_seconds": 0.002}) == (0.002, None, None)


def test_compare_pictures_are_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    written = pictures.write_compare_pictures(_load(COMPARE), tmp_path / "plots")
    assert [p.name for p in written] == list(pictures.PICTURES)
    assert all(p.read_bytes()[:8] == PNG for p in written)


def test_the_page_is_self_contained_and_holds_every_section(tmp_path):
    pytest.importorskip("matplotlib")
    report = build([RUN, COMPARE, BENCH], html_path=tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert page == report.html
    # No network: nothing linked or loaded from elsewhere.
    assert not re.search(r"""(src|href)=["'](https?:)?//""", page)
    assert "<link" not in page
    assert "@import" not in page
    assert "url(" not in page
    assert "<script" not in page
    for port in _ports(RUN):
        assert f'id="matrix-{port}"' in page
    for port in _ports(COMPARE):
        assert f'<tr data-key="{port}"' in page
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len(pictures.PICTURES) + 1  # + the bench plot
    assert all(base64.b64decode(image)[:8] == PNG for image in images)
    mutation = _load(RUN)["mutation_score"]
    assert f"Mutation score: {mutation['killed']}/{mutation['total']} killed" in page
    assert "Precision: bits" in page
    assert "Bench targets" in page
    assert "inconclusive" in page  # the recorded bench ran on a loaded machine
    assert "Machine and versions" in page
    assert _load(RUN)["machine"]["cpu"] in page


def test_the_markdown_has_the_same_tables_and_writes_its_pictures(tmp_path):
    pytest.importorskip("matplotlib")
    report = build([RUN, COMPARE], markdown_path=tmp_path / "summary.md", html_path=None)
    text = (tmp_path / "summary.md").read_text()
    assert text == report.markdown
    for section in report.sections:
        for table in section.tables:
            assert f"### {table.title}" in text
            for key in table.keys:
                assert f"| {key} |" in text or f"| {key} " in text
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(links) == len(pictures.PICTURES)
    assert all((tmp_path / link).read_bytes()[:8] == PNG for link in links)


def test_no_pictures_needs_no_matplotlib_and_says_so():
    report = build([COMPARE], pictures=False)
    assert "data:image/png" not in report.html
    assert "pictures left out on request" in report.html


def test_build_takes_parsed_reports_and_refuses_nothing():
    report = build([_load(RUN)])
    assert report.kinds == ["run"]
    assert len(repr(report)) < 200  # not the whole page
    with pytest.raises(ValueError, match="reports: give at least one"):
        build([])
    with pytest.raises(DocumentError, match=r"reports\[0\]: expected a path"):
        build([42])


def test_the_command_writes_the_page_and_exits_2_on_a_bad_report(tmp_path, capsys):
    out = tmp_path / "page.html"
    assert cli.main(["report", str(RUN), "--out", str(out), "--no-pictures"]) == 0
    assert 'id="matrix-pytorch"' in out.read_text()
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert cli.main(["report", str(bad), "--out", str(out)]) == 2
    assert "bad.json: not a run, compare or bench" in capsys.readouterr().err


def test_the_command_needs_a_report_or_make():
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["report"])
    assert exit_info.value.code == 2


def test_make_runs_each_command_in_a_child_with_the_ports_asked(tmp_path):
    from conformance.commands import report as command

    args = cli.parser().parse_args(
        ["report", "--make", "compare", "--implementation", "pytorch", "--profile", "dev"]
    )
    words, path = command.make_command("compare", args, tmp_path)
    assert words[1:4] == ["-m", "conformance", "compare"]
    assert words[4:] == ["--json", "--no-first-call", "--implementation", "pytorch"]
    assert path == tmp_path / "compare.json"
    words, _ = command.make_command("run", args, tmp_path)
    assert words[4:] == ["--json", "--profile", "dev", "--implementation", "pytorch"]
    words, path = command.make_command("bench", args, tmp_path)
    assert path == tmp_path / "bench" / "bench.json"


# ---------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------


def _csv(path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_the_run_csv_has_a_row_per_port_and_property(tmp_path):
    data = _load(RUN)
    rows = _csv(csv_files.write_run(tmp_path / "run.csv", data))
    expected = [(p["name"], o["property"]) for p in data["ports"] for o in p["outcomes"]]
    assert [(r["port"], r["property"]) for r in rows] == expected
    first = data["ports"][1]["outcomes"][1]
    (row,) = [r for r in rows if (r["port"], r["property"]) == ("pytorch", first["property"])]
    assert float(row["worst_ratio"]) == first["worst_ratio"]
    assert int(row["examples"]) == first["examples"]


def test_the_compare_csv_has_raw_numbers_per_port(tmp_path):
    data = _load(COMPARE)
    rows = _csv(csv_files.write_compare(tmp_path / "compare.csv", data))
    assert [r["port"] for r in rows] == _ports(COMPARE)
    tf = next(p for p in data["ports"] if p["name"] == "tensorflow")
    (row,) = [r for r in rows if r["port"] == "tensorflow"]
    assert float(row["output_max_abs"]) == tf["output"]["max_abs"]
    assert float(row["w1_bits"]) == tf["precision"]["w1"]["bits"]
    assert int(row["saved_on_bytes"]) == tf["residuals"]["on"]["bytes"]
    assert row["backward_matmuls_rerun"] == str(tf["residuals"]["on"]["recomputed"]["MatMul"])


def test_the_bench_csv_carries_n_and_quartiles(tmp_path):
    data = _load(BENCH)
    rows = _csv(csv_files.write_bench(tmp_path / "bench.csv", data))
    assert len(rows) == len(data["results"])
    for row, result in zip(rows, data["results"], strict=True):
        assert int(row["n"]) == len(result["step_seconds"])
        low, high = float(row["step_q1_seconds"]), float(row["step_q3_seconds"])
        assert min(result["step_seconds"]) <= low <= high <= max(result["step_seconds"])


def test_compare_accepts_csv_and_plot_flags(tmp_path):
    args = cli.parser().parse_args(
        ["compare", "--csv", str(tmp_path / "c.csv"), "--plot", str(tmp_path / "plots")]
    )
    assert args.csv == tmp_path / "c.csv"
    assert args.plot == tmp_path / "plots"


# ---------------------------------------------------------------------------
# A real browser
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> str:
    found = browser.find()
    if found is None:
        pytest.skip(
            "no Chromium found (chromium, chromium-browser, google-chrome or $CHROMIUM): "
            "apt-get install chromium"
        )
    return found


def test_the_browser_check_catches_a_broken_image_and_a_console_error(tmp_path, chromium):
    # The check itself can fail: an image that does not decode, a script error.
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><head></head><body>"
        '<table><tr id="matrix-x"><td>x</td></tr></table>'
        '<img alt="broken" src="data:image/png;base64,AAAA">'
        "<script>console.error('boom'); undefinedFunction();</script></body></html>"
    )
    seen = browser.check(page, tmp_path, chromium)
    assert seen.matrix_rows == ["matrix-x"]
    assert seen.images == [{"alt": "broken", "complete": True, "naturalWidth": 0}]
    assert any("boom" in line for line in seen.console)
    assert any("undefinedFunction" in error for error in seen.errors)


def test_the_report_renders_in_chromium_with_every_row_and_image(tmp_path, chromium):
    pytest.importorskip("matplotlib")
    page = tmp_path / "report.html"
    build([RUN, COMPARE, BENCH], html_path=page)
    seen = browser.check(page, tmp_path, chromium)
    assert seen.matrix_rows == [f"matrix-{port}" for port in _ports(RUN)]
    assert len(seen.images) == len(pictures.PICTURES) + 1
    for image in seen.images:
        assert image["naturalWidth"] > 0, image
    assert seen.errors == []
    assert seen.console == []
    shot = tmp_path / "report.png"
    browser.screenshot(page, shot, tmp_path, chromium)
    assert shot.read_bytes()[:8] == PNG


def test_compare_spreads_become_whiskers_and_table_and_csv_figures(tmp_path):
    # compare's JSON: the median, half the interquartile range, and the sample count.
    data = _load(COMPARE)
    row = next(p for p in data["ports"] if p["name"] == "pytorch")
    row.update(warm_vjp_seconds=0.004, warm_forward_seconds=0.002, warm_samples=9)
    row["warm_spread"] = {"forward": 0.0001, "vjp": 0.0005}
    assert pictures.warm_vjp(row) == pytest.approx((0.004, 0.0035, 0.0045))
    table = tables.compare_table(data)
    cells = dict(zip(table.header, table.rows[table.keys.index("pytorch")], strict=True))
    assert cells["warm vjp (ms)"] == "4 ± 0.5 (n=9)"
    assert cells["warm fwd (ms)"] == "2 ± 0.1 (n=9)"
    (found,) = [
        r for r in _csv(csv_files.write_compare(tmp_path / "c.csv", data)) if r["port"] == "pytorch"
    ]
    assert (found["warm_vjp_half_iqr_seconds"], found["warm_samples"]) == ("0.0005", "9")
    row["warm_spread"] = {"vjp": float("nan")}  # one sample: no spread to draw
    assert pictures.warm_vjp(row) == (0.004, None, None)


def test_compare_writes_its_csv_and_pictures_where_asked(tmp_path):
    import io

    from rich.console import Console

    from conformance.commands import compare as command

    pytest.importorskip("matplotlib")
    args = cli.parser().parse_args(
        ["compare", "--csv", str(tmp_path / "c.csv"), "--plot", str(tmp_path / "plots")]
    )
    said = io.StringIO()
    command._write_files(_load(COMPARE), args, Console(file=said))
    assert [r["port"] for r in _csv(tmp_path / "c.csv")] == _ports(COMPARE)
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == sorted(pictures.PICTURES)
    assert "compare: wrote" in said.getvalue()


def test_run_writes_its_csv_and_names_the_flag_when_it_cannot(tmp_path, capsys):
    from conformance.commands import run as command

    assert command._write_csv(_load(RUN), tmp_path / "run.csv")
    assert len(_csv(tmp_path / "run.csv")) == sum(len(p["outcomes"]) for p in _load(RUN)["ports"])
    assert not command._write_csv(_load(RUN), tmp_path / "missing" / "run.csv")
    assert "--csv: cannot write" in capsys.readouterr().err


def test_a_failed_outcome_shows_its_message_and_replay_command():
    data = _load(RUN)
    outcome = data["ports"][1]["outcomes"][2]
    outcome.update(status="fail", examples=3, message="VJP differs at w1", replay="python -m x")
    assert tables.failures(_load(RUN)) is None  # the recorded run passed
    found = tables.failures(data)
    name = data["ports"][1]["name"]
    assert found.rows == [[name, outcome["property"], "✗ fail", "VJP differs at w1", "python -m x"]]
    page = build([data], pictures=False).html
    assert "VJP differs at w1" in page
    assert '<td class="bad">✗ fail · 3 at example · worst 0.269</td>' in page


def test_without_matplotlib_the_page_says_why_its_pictures_are_missing(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)  # as if not installed
    page = build([COMPARE, BENCH]).html
    assert "data:image/png" not in page
    assert page.count("matplotlib is not installed") == 2  # the compare and the bench section


def test_make_reads_what_the_child_wrote_and_names_the_command(tmp_path, monkeypatch):
    from conformance.commands import report as command

    def fake_child(words, stdout, check):  # stands in for `python -m conformance compare`
        stdout.write(COMPARE.read_text())
        return __import__("subprocess").CompletedProcess(words, 1)  # 1: a finding, still a report

    monkeypatch.setattr(command.subprocess, "run", fake_child)
    args = cli.parser().parse_args(["report", "--make", "compare", "--implementation", "pytorch"])
    made = command.make("compare", args, tmp_path)
    assert made.kind == "compare"
    assert made.source == "made now: compare --json --no-first-call --implementation pytorch"
    assert made.data == _load(COMPARE)

    def crashed_child(words, stdout, check):
        return __import__("subprocess").CompletedProcess(words, 2)

    monkeypatch.setattr(command.subprocess, "run", crashed_child)
    with pytest.raises(RuntimeError, match="compare exited 2 without a report"):
        command.make("compare", args, tmp_path)
