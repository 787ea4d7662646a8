"""`python -m conformance report`, the pictures and the CSV, from recorded JSON reports.

tests/data/report holds reports made once on this machine: `run --profile dev
--json` and `compare --dim 32 --features 16 --no-first-call --json` on
flax_linen, pytorch and tensorflow (run.json, compare.json); `bench --framework
jax --framework torch --depths 1 2 4 --batch 128 --features 32 --repeats 5
--max-repeats 10` (bench.json); and, over every port, `run --profile dev --json`
(run-all.json) and `compare --json --no-first-call` with its policy matrix
(compare-all.json); `bench --policies` on a tiny shape (bench-policies.json)
and `bench --scale` with its two-node rows (scale.json). The browser tests
(here, and tests/core/page/test_report_browser.py) open the page in headless Chromium, driven
by Playwright (tools/chromium.py): the full tier (`--full`), marked slow.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

from conformance import cli, colours
from conformance.comparison import restore
from conformance.page import (
    DocumentError,
    build,
    csv_files,
    documents,
    facts,
    pictures,
)
from conformance.page.kinds import held_to
from conformance.tables.kinds import bench_policies, outcomes, plain, scale
from conformance.tables.kinds import compare as compare_render
from conformance.tables.kinds import run as run_tables
from conformance.tables.kinds.compare_matrices import policy_table
from conformance.tables.kinds.spread import spread_words
from tests.support.helpers import ROOT
from tools import chromium

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


def row_n(data, name: str) -> int:
    return next(p for p in data["ports"] if p["name"] == name)["warm_samples"]


def texts(table) -> list[list[str]]:
    """A model table's rows as the words of their cells."""
    return [[cell.text for cell in row.cells] for row in table.rows]


def test_a_matrix_cell_says_pass_with_examples_and_worst_ratio():
    cell = outcomes.cell({"status": "pass", "examples": 62, "worst_ratio": 0.25})
    assert (cell.text, cell.note, cell.mark) == ("✓62", "0.25", "pass")
    failed = outcomes.cell({"status": "fail", "examples": 7, "worst_ratio": None})
    assert (failed.text, failed.note, failed.mark) == ("✗fail", "@7", "fail")
    assert outcomes.cell({"status": "reference", "examples": 0}).text == "ref"
    assert outcomes.cell({"status": "lost", "examples": 0}).mark == "fail"  # unknown: said


def test_the_compare_verdict_names_what_is_over_its_bound():
    row = {
        "name": "p",
        "state": "available",
        "output": {"max_abs": 2e-5, "bound": 1e-5, "worst_ratio": 2.0},
        "exercise": {"max_abs": 0.0, "bound": 1e-5, "worst_ratio": 0.0},
        "gradients": {"w1": {"max_abs": 1e-7, "bound": 1e-5, "worst_ratio": 0.01}},
        "precision": {"w1": {"bits": 10.6, "ratio": 3.0}, "output": {"bits": 22, "ratio": 0.1}},
    }
    assert facts.compare_verdict(row) == "✗ over the bound: output; precision tier: w1"
    row["output"]["worst_ratio"] = 0.5
    row["precision"]["w1"]["ratio"] = 0.2
    assert facts.compare_verdict(row).startswith("✓")


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
        assert f' data-key="{port}"' in page
    tags = re.findall(r"<img [^>]*>", page)  # every picture says what it shows
    assert tags
    assert all(re.search(r'alt="[^"]{40,}"', tag) for tag in tags)
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


def test_compare_spreads_become_whiskers_and_table_and_csv_figures(tmp_path):
    # compare's JSON: the median, half the interquartile range, and the sample count.
    data = _load(COMPARE)
    row = next(p for p in data["ports"] if p["name"] == "pytorch")
    row.update(warm_vjp_seconds=0.004, warm_forward_seconds=0.002, warm_samples=9)
    row["warm_spread"] = {"forward": 0.0001, "vjp": 0.0005}
    assert pictures.warm_vjp(row) == pytest.approx((0.004, 0.0035, 0.0045))
    # The page's compare table is the terminal's, from the same JSON: fwd, then vjp, and n.
    table = compare_render.summary_table(restore.from_json(data))
    (warm,) = [c for c in table.columns if c.name.startswith("warm ms")]
    line = table.rows[table.keys.index("pytorch")]
    cell = line.cells[table.columns.index(warm)]
    assert cell.text == "2 ± 0.1\n4 ± 0.5"
    assert f"n={row_n(data, 'pytorch')}" in warm.name + cell.note
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

    def write(path):
        return command._write_side_output("--csv", path, csv_files.write_run, _load(RUN), 1)

    assert write(tmp_path / "run.csv")
    assert len(_csv(tmp_path / "run.csv")) == sum(len(p["outcomes"]) for p in _load(RUN)["ports"])
    assert not write(tmp_path / "missing" / "run.csv")
    said = capsys.readouterr().err
    assert "--csv: cannot write" in said
    assert "the verdict stands: failed (exit 1)" in said


def test_a_failed_outcome_shows_its_message_and_replay_command():
    data = _load(RUN)
    outcome = data["ports"][1]["outcomes"][2]
    outcome.update(status="fail", examples=3, message="VJP differs at w1", replay="python -m x")
    name = data["ports"][1]["name"]
    row = {r.key: r for r in run_tables.matrix(data).rows}[name]
    assert row.failed
    line = {r.key: r for r in row.details.rows}[f"case-{name}-{outcome['property']}"]
    seconds = f"{outcome['seconds']:.1f}"
    assert [c.text for c in line.cells][1:] == ["✗ FAIL", "3", "0.27", seconds,
                                                "VJP differs at w1", "python -m x"]  # fmt: skip
    page = build([data], pictures=False).html
    # It stands out without colour: a ✗ in its cell, the row marked, its details open.
    opened = re.search(rf'<tr [^>]*id="matrix-{name}"[^>]*>', page).group(0)
    assert 'class="failed"' in opened
    cells = re.search(rf'<tr [^>]*id="matrix-{name}"[^>]*>(.*?)</tr>', page).group(1)
    assert '<td class="bad"><a href="#case-' in cells
    assert "✗fail" in cells
    details = re.search(rf'<details class="row failed" id="matrix-details-{name}" open>', page)
    assert details is not None
    assert "VJP differs at w1" in page[details.end() :]
    assert "<code>python -m x</code>" in page[details.end() :]
    assert page.count('<td class="bad"><a href="#case-') == 1
    # Markdown: the failed row's details follow the matrix.
    text = build([data], pictures=False).markdown
    assert "| VJP differs at w1 | python -m x |" in text


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


# ---------------------------------------------------------------------------
# Every port: the grid, the policy matrix, the benches, versions
# ---------------------------------------------------------------------------

RUN_ALL, COMPARE_ALL = DATA / "run-all.json", DATA / "compare-all.json"
POLICY_BENCH, SCALE = DATA / "bench-policies.json", DATA / "scale.json"
EVERYTHING = (RUN_ALL, COMPARE_ALL, BENCH, POLICY_BENCH, SCALE)


def test_the_bench_policies_and_scale_reports_are_told_apart():
    assert documents.read(POLICY_BENCH).kind == "bench-policies"
    assert documents.read(SCALE).kind == "scale"
    found = documents.from_data({"kind": "versions", "rows": []}).kind
    assert found == "versions"


def test_the_matrix_has_one_compact_cell_per_port_and_property_and_its_details():
    data = _load(RUN_ALL)
    table = run_tables.matrix(data)
    assert table.keys == _ports(RUN_ALL)
    assert all(len(row.cells) == len(data["properties"]) + 2 for row in table.rows)
    canonical = table.rows[0]
    assert [c.text for c in canonical.cells][1:4] == ["ref", "ref", "ref"]
    # A passing cell's bar is its worst error/bound; each row's details, a line a property.
    pytorch = {r.key: r for r in table.rows}["pytorch"]
    by_key = {o["property"]: o for o in _ports_data(data)["pytorch"]["outcomes"]}
    assert pytorch.cells[3].fill == pytest.approx(by_key["c_vjp"]["worst_ratio"])
    assert [line.key for line in pytorch.details.rows] == [
        f"case-pytorch-{key}" for key in data["properties"]
    ]


def _ports_data(data):
    return {p["name"]: p for p in data["ports"]}


def test_the_page_holds_every_ports_row_in_the_matrix_and_the_policy_matrix():
    page = build(EVERYTHING, pictures=False).html
    for port in _ports(RUN_ALL):
        assert f' id="matrix-{port}"' in page
    measured = [r["name"] for r in _load(COMPARE_ALL)["ports"] if r.get("policies")]
    for port in measured:
        assert f' id="policies-{port}"' in page
    # Only ports get a policy row: a comparison row that measured no policy is not one.
    assert "mindspore_graph" in _ports(COMPARE_ALL)
    assert 'id="policies-mindspore_graph"' not in page
    # Bars under the passing cells, and no script: details are one click away.
    assert page.count('<span class="bar"') >= 100
    assert "<script" not in page
    assert page.count('<details class="row" id="matrix-details-') == len(_ports(RUN_ALL))
    # Headings and a table of contents to navigate by.
    assert page.count('<nav class="toc"') == 1
    for anchor in ("run-0", "compare-1", "bench-2", "bench-policies-3", "scale-4", "machine"):
        assert f'href="#{anchor}"' in page
        assert f'<section id="{anchor}">' in page


def test_the_policy_matrix_says_expressible_degraded_and_who_measured():
    data = _load(COMPARE_ALL)
    comparison = restore.from_json(data)
    held = held_to(data, [_load(RUN_ALL)])
    table = policy_table(comparison.ports, held)
    headings = {row.key: row.cells[0].text for row in table.rows if row.heading}
    assert list(headings) == [r["name"] for r in data["ports"] if r.get("policies")]
    lines = {row.key: [c.text for c in row.cells] for row in table.rows if not row.heading}
    assert lines["flax_linen full"][1:] == ["{x}", "5", "equal", "as expected"]
    assert lines["flax_linen budget"][4].startswith("not expressible: ")
    # The port's own spelling is under the policy's name.
    notes = {row.key: row.cells[0].note for row in table.rows if not row.heading}
    assert notes["flax_linen full"] == "nn.checkpoint(MLP)"
    # A documented degradation is shown as such, never as a pass.
    marks = {row.key: row.cells[4].mark for row in table.rows if not row.heading}
    assert marks["tensorflow full"] == "warn"
    assert "documented degradation" in lines["tensorflow full"][4]
    # Whose expectations, and who measured the evidence.
    assert headings["pytorch"] == (
        "pytorch · held to the suite: implementations/stacks/torch/expectations.py · "
        "evidence: the suite's instrument"
    )
    assert headings["tfjs"].endswith("evidence: self-reported by the port")
    # Without a run report, compare still says who measured.
    assert held_to(data, [])["tfjs"] == (
        "held to see the run report · evidence: self-reported by the port"
    )
    # Every role a cell shows is in the legend (y, the second layer's output, too).
    roles = {role for r in data["ports"] for c in r.get("policies") or [] for role in c["roles"]}
    assert "y" in roles
    for role in roles:
        assert re.search(rf"(^|[ (,]){role}( =| the|'s| relu)", table.caption), role


def test_a_policy_cell_that_differs_from_the_canonical_is_a_failure():
    cell = {"policy": "full", "expressible": True, "spelling": "jax.checkpoint", "roles": ["x"],
            "kib": 1.0, "backward_matmuls": 5, "agrees": False, "worst_ratio": 3.5,
            "expected": "", "degradations": [], "error": ""}  # fmt: skip
    compare = {"kind": "compare", "canonical": "flax_linen", "notes": [], "seed": 0, "dim": 4,
               "features": 4, "ports": [
        {"name": "p", "state": "available", "policies": [cell]}]}  # fmt: skip
    table = policy_table(restore.from_json(compare).ports)
    (line,) = [row for row in table.rows if not row.heading]
    assert (line.cells[3].text, line.cells[3].mark) == ("off x3.5", "fail")
    assert line.failed


def test_the_bench_policies_and_scale_sections_say_n_and_noise():
    table = bench_policies.table(_load(POLICY_BENCH))
    assert len(table.rows) == len(_load(POLICY_BENCH)["results"])
    spread = dict(zip(table.header, texts(table)[0], strict=True))["spread"]
    assert spread == "n=2 · too few for an IQR"
    notes = bench_policies.notes(_load(POLICY_BENCH)).items
    assert "jax · budget: not expressible (JAX has no memory-budget policy)" in notes
    found = scale.table(_load(SCALE))
    assert len(found.rows) == len(_load(SCALE)["rows"])
    assert all(re.fullmatch(r"n=15 · IQR \d+%(: noise)?", row[-1]) for row in texts(found))
    assert spread_words(0.7, 9) == "n=9 · IQR 70%: noise"


def test_a_versions_section_takes_a_plain_list_of_rows():
    rows = [
        {"framework": "torch", "version": "2.5.1", "port": "pytorch", "failed": False,
         "outcomes": {"a_init": "pass", "c_vjp": "fail"}},
        {"framework": "torch", "version": "2.4.0", "port": "pytorch", "failed": True},
    ]  # fmt: skip
    table = plain.versions_table(rows)
    assert table.header == ["framework", "version", "port", "failed", "outcomes.a_init",
                            "outcomes.c_vjp"]  # fmt: skip
    assert texts(table)[0] == ["torch", "2.5.1", "pytorch", "✓ passed", "✓ pass", "✗ fail"]
    page = build([], versions=rows, pictures=False).html
    assert '<section id="versions"><h2>Versions</h2>' in page
    assert '<tr data-key="torch 2.4.0 pytorch"' in page
    from_file = build([{"kind": "versions", "rows": rows}], pictures=False).html
    assert '<tr data-key="torch 2.5.1 pytorch"' in from_file


def test_make_bench_is_quick_unless_asked_and_makes_policies_and_scale(tmp_path):
    from conformance.commands import report as command

    args = cli.parser().parse_args(["report", "--make", "bench"])
    words, path = command.make_command("bench", args, tmp_path)
    assert words[3:6] == ["bench", "--out", str(tmp_path / "bench")]
    assert path == tmp_path / "bench" / "bench.json"
    assert words[words.index("--depths") + 1 :][:3] == ["1", "2", "4"]
    assert "--framework" in words
    assert words[words.index("--repeats") + 1] == "5"
    full = cli.parser().parse_args(["report", "--make", "bench", "--full-bench"])
    assert command.make_command("bench", full, tmp_path)[0][6:] == []
    words, path = command.make_command("policies", args, tmp_path)
    assert words[3:5] == ["bench", "--policies"]
    assert path.name == "bench-policies.json"
    words, path = command.make_command("scale", args, tmp_path)
    assert words[3:] == ["bench", "--scale", "--out", str(tmp_path / "scale")]
    assert path.name == "scale.json"


def test_one_colour_and_marker_per_engine_the_same_everywhere():
    engines = colours.engines()
    assert engines[0] == "jax"  # the canonical port's engine first
    assert {"torch", "tensorflow", "autograd", "mlx"} <= set(engines)
    assert len({colours.colour(e) for e in engines}) == len(engines)
    assert len({colours.marker(e) for e in engines}) == len(engines)
    assert colours.colour("from-elsewhere") == colours.OTHER_COLOUR
    assert colours.bench_engine("deepspeed") == "torch"
    assert colours.bench_engine("mindspore_graph") == "mindspore"


def test_a_spread_wider_than_half_the_median_is_called_noise():
    steady = {"warm_vjp_seconds": 0.010, "warm_spread": {"vjp": 0.001}, "warm_samples": 9}
    found = pictures.spread(steady)
    assert found["relative"] == pytest.approx(0.2)
    assert not found["noise"]
    assert pictures.spread_words(found) == "n=9 · IQR 20% of the median"
    wide = {"warm_vjp_seconds": 0.010, "warm_spread": {"vjp": 0.012}, "warm_samples": 9}
    found = pictures.spread(wide)  # median - half the IQR is below zero
    assert found["noise"]
    assert found["low"] is None
    assert pictures.spread_words(found).endswith(": noise")
    assert pictures.spread_words(pictures.spread({"warm_vjp_seconds": 0.01})) == (
        "n unknown · median only, no spread"
    )


def test_every_picture_of_every_report_is_a_png_with_alt_text():
    pytest.importorskip("matplotlib")
    report = build(EVERYTHING)
    found = [p for s in report.sections for p in s.pictures]
    assert len(found) == len(pictures.PICTURES) + 3  # + bench, policies, scale
    assert all(p.png[:8] == PNG and len(p.alt) > 80 for p in found)


# ---------------------------------------------------------------------------
# A real browser: one page, built once from every recorded report, at 1400 and 390 px
# ---------------------------------------------------------------------------


#: The browser tests are the full tier's: Chromium is no pip package.
CHROMIUM = pytest.mark.slow(
    reason="needs Debian's chromium (apt-get install chromium): opens the page in headless Chromium"
)


def _script():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "report_screenshots", ROOT / "tools" / "report_screenshots.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png_width(path) -> int:
    return int.from_bytes(path.read_bytes()[16:20], "big")  # the IHDR chunk's width


@pytest.fixture(scope="module")
def executable() -> str:
    found = chromium.find()
    if found is None:
        pytest.skip(
            "no Chromium found (chromium, chromium-browser, google-chrome or $CHROMIUM): "
            "apt-get install chromium"
        )
    return found


@pytest.fixture(scope="module")
def shown(executable, tmp_path_factory):
    """tools/report_screenshots.py on the recorded reports (the page checked and both
    screenshots saved, as for docs/), then what the page shows at each width."""
    pytest.importorskip("matplotlib")
    where = tmp_path_factory.mktemp("report-browser")
    script = _script()
    assert script.main(["--reports", *map(str, EVERYTHING), "--out", str(where),
                        "--keep", str(where)]) == 0  # fmt: skip
    page = where / "report.html"
    with chromium.Browser(executable) as browser:
        browser.open(page)
        looks = {width: browser.look(width) for width in (chromium.DESKTOP, chromium.PHONE)}
    return where, looks


@CHROMIUM
@pytest.mark.parametrize("width", [chromium.DESKTOP, chromium.PHONE])
def test_the_report_in_chromium_fits_the_width_and_shows_every_row(shown, width):
    _, looks = shown
    look = looks[width]
    assert look.width == width
    assert not look.scrolls_sideways, (look.scroll_width, look.too_wide)
    assert look.too_wide == []
    assert len(look.images) == len(pictures.PICTURES) + 3
    assert look.broken_images == []
    if width == chromium.DESKTOP:
        assert all(0 < image["shown_width"] <= width for image in look.images)
    else:  # a phone keeps each picture readable, in a box that pans (the body does not)
        assert all(image["shown_width"] >= min(image["natural_width"], 2 * width) - 1
                   for image in look.images)  # fmt: skip
    assert all(image["alt"] for image in look.images)
    assert look.errors == []
    rows = [f"matrix-{port}" for port in _ports(RUN_ALL)]
    rows += [f"policies-{r['name']}" for r in _load(COMPARE_ALL)["ports"] if r.get("policies")]
    assert [row for row in look.rows if row in rows] == rows
    assert look.contents >= 6
    assert look.headings[0] == "h1 remat-conformance report"
    assert "h2 Compare" in look.headings


@CHROMIUM
def test_the_tests_save_both_screenshots(shown):
    where, _ = shown
    desktop, phone = where / "report.png", where / "report-phone.png"
    assert desktop.read_bytes()[:8] == phone.read_bytes()[:8] == PNG
    assert (_png_width(desktop), _png_width(phone)) == (chromium.DESKTOP, chromium.PHONE)
    print(f"screenshots: {desktop} {phone}")


@CHROMIUM
def test_the_browser_check_catches_a_wide_page_a_broken_image_and_an_error(tmp_path, executable):
    # The check itself can fail: a body wider than the phone, an image that does not
    # decode, a console error and an uncaught exception.
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width">'
        "</head><body>"
        '<table><tr id="matrix-x"><td>x</td></tr></table>'
        '<div style="width: 900px">wide</div>'
        '<img alt="broken" src="data:image/png;base64,AAAA">'
        "<script>console.error('boom'); undefinedFunction();</script></body></html>"
    )
    with chromium.Browser(executable) as browser:
        browser.open(page)
        look = browser.look(chromium.PHONE)
    assert look.rows == ["matrix-x"]
    assert look.scrolls_sideways
    assert look.too_wide == ["div"]
    assert look.broken_images == ["broken"]
    assert any("boom" in error for error in look.errors)
    assert any("undefinedFunction" in error for error in look.errors)
    script = _script()
    with chromium.Browser(executable) as browser:
        assert script.problems(page, browser)


@CHROMIUM
def test_a_closed_browser_leaves_no_folder_behind(tmp_path, executable, monkeypatch):
    # Chromium's singleton socket folder (TMPDIR/org.chromium.Chromium.*) outlived every
    # browser the old client stopped: four a test run, on and on. Here TMPDIR is the test's own
    # (short: Chromium aborts on a socket path over 107 bytes, as pytest's tmp_path can give).
    page = tmp_path / "blank.html"
    page.write_text("<!DOCTYPE html><html><body>blank</body></html>")
    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        monkeypatch.setenv("TMPDIR", scratch)
        with chromium.Browser(executable) as browser:
            browser.open(page)
            made = " ".join(sorted(p.name for p in Path(scratch).iterdir()))
            assert "org.chromium.Chromium." in made, made  # the singleton socket's folder
            assert "playwright_chromiumdev_profile-" in made, made
        assert list(Path(scratch).iterdir()) == []


def test_without_playwright_the_browser_fails_naming_it(monkeypatch):
    # Chromium present and Playwright missing is a failure, never a skip read as a pass.
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # import fails
    with pytest.raises(
        chromium.BrowserError, match=r"Chromium is here \(/usr/bin/chromium\) but Playwright is not"
    ):
        chromium.Browser("/usr/bin/chromium")


#: Python's fork handlers run in this process, noted by the one registered below.
_FORK_HANDLERS_RAN: list[int] = []


@CHROMIUM
def test_starting_the_browser_runs_no_python_between_fork_and_exec(tmp_path, executable):
    # A `preexec_fn` made Python fork: it ran every fork handler, JAX's too, which warns that
    # its threads may deadlock the child (three warnings a test run). A plain fork and exec
    # runs none. (Registered for good: it only notes that it ran.)
    os.register_at_fork(before=lambda: _FORK_HANDLERS_RAN.append(1))
    _FORK_HANDLERS_RAN.clear()
    page = tmp_path / "blank.html"
    page.write_text("<!DOCTYPE html><html><body>blank</body></html>")
    with chromium.Browser(executable) as browser:
        browser.open(page)
    assert _FORK_HANDLERS_RAN == []


def test_the_quick_bench_says_it_was_a_smoke_run_and_spells_save_dots(tmp_path):
    pytest.importorskip("matplotlib")
    # The recorded bench is a quick sweep on a loaded machine: five repeats, every ratio noise.
    page = build([BENCH]).html
    assert "A smoke run (5 timed repeats, 18 of 18 time ratios noise)" in page
    assert not re.search(r"±\d{3,}%", page)  # "±684%!": a spread past half the median is noise
    assert "28.75 noise" in page
    assert "save-mm" not in page  # the tables, the captions and the picture's alt text
    assert re.search(r"<td[^>]*>save_dots</td>", page)
    rows = _csv(csv_files.write_bench(tmp_path / "bench.csv", _load(BENCH)))
    assert {r["mode"] for r in rows} == {"none", "full", "save_dots"}


#: Run in the page: each failed row's message and replay cells (their left and right edges),
#: and every short figure (no space in it) of the tables split over more than one line.
PHONE_PROBE = """(() => {
  const cells = Array.from(document.querySelectorAll("details.row.failed td"))
    .filter(td => td.textContent.includes("VJP differs") || td.querySelector("code"))
    .map(td => { const b = td.getBoundingClientRect(); return [b.left, b.right]; });
  const split = [];
  for (const td of document.querySelectorAll("table td")) {
    if (td.classList.contains("message") || td.querySelector("code")) continue;
    const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.textContent.split(/\\s+/)) {
        if (!/\\d/.test(word) || word.length > 24) continue;
        const start = node.textContent.indexOf(word);
        const range = document.createRange();
        range.setStart(node, start);
        range.setEnd(node, start + word.length);
        const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
        if (tops.size > 1) split.push(word);
      }
    }
  }
  return JSON.stringify({cells, split});
})()"""


@CHROMIUM
def test_at_phone_width_a_failing_row_shows_its_message_and_replay_and_no_number_splits(
    tmp_path, executable
):
    data = _load(RUN)
    outcome = data["ports"][1]["outcomes"][2]
    replay = "python -m conformance run --implementation pytorch --property c_vjp --profile dev"
    outcome.update(status="fail", examples=3, message="VJP differs at w1 by 4.5e-03 over",
                   replay=replay + " --reproduce 6.170.17:AXicc2RwhEIkAgAcRAJK")  # fmt: skip
    page = tmp_path / "page.html"
    build([data, COMPARE], html_path=page, pictures=False)
    with chromium.Browser(executable) as browser:
        browser.open(page, chromium.PHONE)
        look = browser.look(chromium.PHONE)
        found = json.loads(browser.evaluate(PHONE_PROBE))
    assert not look.scrolls_sideways
    assert len(found["cells"]) == 2  # the message, the replay command
    assert all(left >= 0 and right <= chromium.PHONE for left, right in found["cells"])
    assert found["split"] == []
