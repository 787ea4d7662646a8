"""The report in a quick-start environment (`pip install 'remat-conformance[all]'`, which has no
engines): paddle, mindspore and deepspeed are not installed (issue 60, items 1, 2 and 8).

The recorded reports were made where every engine is installed; here they are rewritten as a
quick-start run writes them: those three ports `unavailable`, with the reason a port load gives
(`implementations.load`: "needs 'paddle', not installed (pip install ...)"), no outcomes, and
no policy rows in compare. The page, its Markdown, its CSV and the terminal's run table must
read "the run passed", with no ✗ and those three ports marked not installed, each with its pip
command in plain sight.
"""

from __future__ import annotations

import csv
import io
import json
import re

from rich.console import Console

from conformance.page import build, csv_files
from conformance.running.results import PortReport, SuiteReport
from conformance.running.runner import Outcome
from conformance.tables.kinds import run as run_tables
from conformance.tables.render import terminal as terminal_render
from tests.support.helpers import ROOT

DATA = ROOT / "tests" / "data" / "report"
#: The engines the `all` extra leaves out, and the extra that installs each.
ENGINES = {"paddle": "paddle", "mindspore": "mindspore", "deepspeed": "deepspeed"}


def _reason(port: str) -> str:
    return f"needs {port!r}, not installed (pip install 'remat-conformance[{ENGINES[port]}]')"


def quick_start_run() -> dict:
    run = json.loads((DATA / "run-all.json").read_text())
    for port in run["ports"]:
        if port["name"] in ENGINES:
            port.update(state="unavailable", reason=_reason(port["name"]), framework="",
                        versions={}, environment={}, outcomes=[], seconds=0.1)  # fmt: skip
    run["failed"] = False
    return run


def quick_start_compare() -> dict:
    compare = json.loads((DATA / "compare-all.json").read_text())
    for row in compare["ports"]:
        if row["name"] in ENGINES or row["name"].startswith("mindspore"):
            row.update(state="unavailable", reason=_reason("mindspore" if row["name"].startswith(
                "mindspore") else row["name"]), policies=[])  # fmt: skip
    return compare


def _matrix_rows(page: str) -> dict[str, str]:
    """The conformance matrix's rows on the page: port -> the row's HTML."""
    table = re.search(r'<table class="matrix">(.*?)</table>', page, re.S).group(1)
    return dict(re.findall(r'<tr data-key="([^"]+)" id="matrix-[^"]+"[^>]*>(.*?)</tr>', table))


def test_the_page_reads_passed_with_no_cross_and_three_ports_not_installed():
    page = build([quick_start_run(), quick_start_compare()], pictures=False).html
    assert "The run passed · 14 conform · 3 not installed" in page
    assert "have a ✗" not in page
    rows = _matrix_rows(page)
    assert len(rows) == 17
    for port, extra in ENGINES.items():
        row = rows[port]
        assert "✗" not in row
        assert 'class="bad"' not in row
        # The pip command is in the row's text, not only in a tooltip.
        shown = re.sub(r'title="[^"]*"', "", row)
        assert f"pip install &#x27;remat-conformance[{extra}]&#x27;" in shown
        assert 'class="muted"' in row
    assert not any('class="failed"' in row for row in rows.values())
    # Only ports get rows in the policy matrix: none for a variant `list` does not know.
    assert 'id="policies-mindspore_graph"' not in page
    assert 'id="policies-paddle"' not in page


def test_from_a_clone_the_row_shows_the_pip_command_and_the_clone_is_its_title():
    # A port loaded from a clone says where to run pip (`implementations.installing`): the
    # row shows the command, the clone's path (this machine's) is the cell's title.
    run = quick_start_run()
    command = "pip install -c constraints.txt -e '.[paddle]'"
    paddle = next(p for p in run["ports"] if p["name"] == "paddle")
    paddle["reason"] = f"needs 'paddle', not installed (cd /home/me/remat && {command})"
    row = _matrix_rows(build([run], pictures=False).html)["paddle"]
    assert 'title="cd /home/me/remat &amp;&amp; pip install' in row
    assert f"<small>{command}</small>".replace("'", "&#x27;") in re.sub(r' title="[^"]*"', "", row)


def test_the_markdown_and_the_csv_count_them_apart():
    report = build([quick_start_run()], pictures=False)
    assert "The run passed · 14 conform · 3 not installed" in report.markdown
    matrix = report.markdown.split("### remat-conformance", 1)[1].split("\n\n", 2)[1]
    assert "✗" not in matrix
    assert "paddle<br>pip install 'remat-conformance[paddle]'" in matrix
    rows = list(csv.DictReader(io.StringIO(_csv(quick_start_run()))))
    paddle = [r for r in rows if r["port"] == "paddle"]
    assert [(r["state"], r["reason"]) for r in paddle] == [
        ("not installed", "pip install 'remat-conformance[paddle]'")
    ]


def _csv(run: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(csv_files.RUN_HEADER)
    writer.writerows(csv_files.run_rows(run))
    return out.getvalue()


def test_the_terminal_run_table_has_no_cross_and_shows_the_pip_command():
    console = Console(record=True, width=200, color_system=None)
    table, missing = run_tables.terminal_matrix(quick_start_run())  # as `run` prints it
    terminal_render.print_block(console, table)
    assert "✗" not in console.export_text()
    for extra in ENGINES.values():
        assert f"pip install 'remat-conformance[{extra}]'" in missing


def test_the_page_says_which_ports_the_run_left_out_and_the_command_that_runs_them():
    page = build([quick_start_run()], pictures=False).html
    line = re.search(r"<p class=\"note\">Not in this run: (.*?)</p>", page).group(1)
    assert "sharded ports jax_spmd, torch_fsdp" in line
    assert "python -m conformance --profile scale" in line


def test_a_skipped_propertys_reason_is_in_its_rows_details():
    run = json.loads((DATA / "run-all.json").read_text())
    why = "not expressible: the stack has no nested checkpoint"
    run["ports"][3]["outcomes"][2].update(status="skip", message=why)
    page = build([run], pictures=False).html
    name = run["ports"][3]["name"]
    details = re.search(rf'<details class="row" id="matrix-details-{name}">(.*?)</details>',
                        page, re.S).group(1)  # fmt: skip
    assert why in details


def test_the_terminal_report_counts_not_installed_apart_says_what_it_left_out_and_why_skipped():
    why = "not expressible: the stack has no nested checkpoint"
    report = SuiteReport(
        "dev", 20, "menu", "flax_linen",
        [
            PortReport("flax_linen", framework="flax", outcomes=[
                Outcome("flax_linen", "a_init", "reference"),
                Outcome("flax_linen", "b_forward", "pass", 20),  # checked: else nothing ran
                Outcome("flax_linen", "c_vjp", "skip", message=why)]),
            PortReport("paddle", "unavailable", _reason("paddle")),
        ],
        None,
    )  # fmt: skip
    console = Console(record=True, width=200, color_system=None)
    run_tables.print_report(report, console)
    text = console.export_text()
    assert "The run passed · 1 conform · 1 not installed" in text
    assert f"skipped flax_linen · c_vjp: {why}" in text
    assert "Not in this run: sharded ports jax_spmd, torch_fsdp" in text
    assert "unavailable" not in text
