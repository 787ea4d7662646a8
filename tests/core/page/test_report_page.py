"""What the page draws, from today's reports: one summary row per port at the top, the port x
property grid with (l), the policy grid (port x policy), the composition grid, the mutants
collapsed, the precision picture's window; and the page's HTML checked without a browser.

tests/data/report/run-k.json and compare-k.json were made on this machine with every port
`[all]` installs (deepspeed, mindspore and paddle not installed): `python -m conformance
--profile dev --json` (61 mutants killed, 6 not run) and `compare --json --no-first-call`
(policies and composition cases per port). The browser's own measure of the widths is
tests/core/page/test_report_browser.py (full tier)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from conformance.page import build, html, pictures
from conformance.tables.kinds import mutants
from implementations.composition import CASES
from implementations.policies import POLICY_NAMES
from tests.support.helpers import ROOT

DATA = ROOT / "tests" / "data" / "report"
RUN, COMPARE = DATA / "run-k.json", DATA / "compare-k.json"


def _load(path):
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def report():
    return build([RUN, COMPARE], pictures=False)


def _table(report, kind):
    (found,) = [t for s in report.sections for t in s.tables if t.kind == kind]
    return found


def _cells(table, key):
    row = {r.key: r for r in table.rows}[key]
    return {c.name: cell for c, cell in zip(table.columns, row.cells, strict=True)}


def test_the_page_opens_with_one_row_per_port_conforms_policies_and_wrapping_twice(report):
    assert report.sections[0].title == "At a glance"
    summary = _table(report, "summary")
    assert report.sections[0].tables == [summary]
    run, compare = _load(RUN), _load(COMPARE)
    assert summary.keys == [p["name"] for p in run["ports"]]
    assert 'id="summary-pytorch"' in report.html
    assert report.html.index('id="summary-') < report.html.index('id="matrix-')
    # Conforms: from the run; not installed is said, never counted as conforming.
    assert _cells(summary, "pytorch")["conforms"].text == "✓ conforms"
    assert _cells(summary, "paddle")["conforms"].text == "○ not installed"
    # Policies honoured out of those declared, counted here from compare's JSON.
    rows = {r["name"]: r for r in compare["ports"]}
    for name in ("pytorch", "tensorflow", "torch_compile"):
        declared = [c for c in rows[name]["policies"] if c["expressible"]]
        cell = _cells(summary, name)["policies honoured"]
        assert cell.text == f"✓ {len(declared)}/{len(declared)}"
    assert _cells(summary, "tensorflow")["policies honoured"].note == "1 degraded (documented)"
    # Wrapping twice: free where nothing grows, the matmuls it adds where they do.
    assert _cells(summary, "pytorch")["wrapped twice"].text == "✓ free"
    by_case = {c["case"]: c for c in rows["tensorflow"]["compositions"]}
    extra = sum(by_case["twice"][k] - by_case["once"][k] for k in ("forward_matmuls",
                                                                  "rerun_matmuls"))  # fmt: skip
    twice = _cells(summary, "tensorflow")["wrapped twice"]
    assert (twice.text, twice.mark, twice.note) == (f"+{extra} mm", "warn", "documented")
    assert extra == 2
    assert _cells(summary, "tfjs")["wrapped twice"].text == "· not expressible"


def test_a_port_that_fails_says_which_properties_at_the_top():
    run = _load(RUN)
    port = next(p for p in run["ports"] if p["name"] == "haiku")
    for outcome in port["outcomes"]:
        if outcome["property"] in ("c_vjp", "k_composition"):
            outcome.update(status="fail", examples=1, message="differs")
    run["failed"] = True
    summary = _table(build([run], pictures=False), "summary")
    cell = _cells(summary, "haiku")["conforms"]
    assert (cell.text, cell.mark, cell.link) == ("✗ (c) (k)", "fail", "#matrix-haiku")


def test_the_property_grid_has_columns_a_to_l(report):
    matrix = _table(report, "matrix")
    assert matrix.header[1:-1] == [f"({letter})" for letter in "abcdefghijkl"]
    assert matrix.keys == [p["name"] for p in _load(RUN)["ports"]]


def test_the_policy_grid_is_port_by_policy_one_row_a_port(report):
    grid = _table(report, "policies")
    measured = [r["name"] for r in _load(COMPARE)["ports"] if r.get("policies")]
    assert grid.keys == measured
    assert len(grid.rows) == len(measured)  # not a block of rows per port
    assert grid.header == ["port", *POLICY_NAMES]
    flax = _cells(grid, "flax_linen")
    assert [flax[p].text for p in ("none", "full", "budget")] == ["✓", "✓", "·"]
    assert flax["full"].note == "{x}"
    assert flax["budget"].title.startswith("not expressible: ")
    assert (_cells(grid, "tensorflow")["full"].text, _cells(grid, "tensorflow")["full"].mark) == (
        "⚠",
        "warn",
    )
    # Each port's lines (spelling, KiB, matmuls, agreement, verdict) are its details, a line
    # a policy, in the columns' order: each cell links to its line.
    row = {r.key: r for r in grid.rows}["pytorch"]
    assert [line.cells[0].text for line in row.details.rows] == list(POLICY_NAMES)
    assert '<a href="#policy-pytorch-full">' in report.html
    assert '<tr id="policy-pytorch-full">' in report.html


def test_the_composition_matrix_reaches_the_page(report):
    grid = _table(report, "compositions")
    compare = _load(COMPARE)
    assert grid.keys == [r["name"] for r in compare["ports"] if r.get("compositions")]
    assert grid.header == ["port", "once", "twice", "under a trainer"]
    assert len(CASES) == 3
    tf = {c["case"]: c for c in next(r for r in compare["ports"] if r["name"] == "tensorflow")[
        "compositions"]}  # fmt: skip
    runs = tf["twice"]["forward_matmuls"] + tf["twice"]["rerun_matmuls"]
    cell = _cells(grid, "tensorflow")["twice"]
    assert (cell.text, cell.mark, cell.note) == (f"⚠ {runs} mm", "warn", "{x}")
    assert cell.title == tf["twice"]["degradation"]
    assert _cells(grid, "tfjs")["twice"].text == "·"
    page = report.html
    assert 'id="compositions-pytorch"' in page
    assert "Composition: the region once, wrapped twice, under a trainer" in page


def test_the_randomness_and_state_matrix_reaches_the_page(report):
    # A row per port and API variant of the stateful block, as compare measured them; every
    # part as declared (the fixture's compare passed), the declared departures as ⚠.
    grid = _table(report, "state")
    compare = _load(COMPARE)
    offered = [(r["name"], c) for r in compare["ports"] for c in r.get("states") or []]
    assert len(offered) >= 20
    rows = [r for r in grid.rows if not r.heading]
    assert [r.key for r in rows] == [f"{name} {cell['variant']}" for name, cell in offered]
    marks = {r.key: [c.mark for c in r.cells[1:4]] for r in rows}
    assert not any("fail" in m for m in marks.values())
    assert marks["flax_linen default"] == ["pass", "pass", "pass"]
    # torch eager's BatchNorm updated twice (pytorch#96136), its fix beside it.
    twice = {r.key: r for r in rows}["pytorch default"].cells
    assert (twice[3].text, twice[3].mark) == ("2 updates", "warn")
    assert "pytorch#96136" in twice[3].note
    assert marks["pytorch stats_outside"] == ["pass", "pass", "pass"]
    assert "randomness and state: the block with dropout and BatchNorm" in report.html


def test_the_composition_matrix_is_in_the_html_and_the_markdown(report):
    # Read from the written page and Markdown, not the model: every port that measured a
    # composition has its grid row, and its details a line per case, on the page; a row in
    # the Markdown's composition table.
    composed = [r for r in _load(COMPARE)["ports"] if r.get("compositions")]
    assert len(composed) >= 10
    title = "Composition: the region once, wrapped twice, under a trainer&#x27;s region"
    assert re.search(f'<h3 id="compare-1-t[0-9]+">{title}</h3>', report.html)
    heading = "### Composition: the region once, wrapped twice, under a trainer's region"
    assert heading in report.markdown
    table = report.markdown.split(heading, 1)[1].split("\n### ", 1)[0]
    for row in composed:
        assert f'id="compositions-{row["name"]}"' in report.html
        for cell in row["compositions"]:
            assert f'<tr id="composition-{row["name"]}-{cell["case"]}">' in report.html
        assert f"\n| {row['name']}<br>{row['framework']} |" in table


def test_mutants_all_killed_are_one_line_and_their_rows_one_click_away(report):
    page = report.html
    run = _load(RUN)
    killed = sum(m["status"] == "killed" for m in run["mutants"])
    assert killed == 61
    assert "Mutation score: 61/61 killed: each rejected by a property" in page
    # Every killed mutant's row sits in a closed <details>, none in the open page.
    start = page.index("The 61 killed mutants")
    closed = page.rindex('<details class="table">', 0, page.index('id="mutants-', start))
    rows = re.findall(r'<tr [^>]*id="mutants-', page)
    assert len(rows) == 61
    assert page.index('id="mutants-') > closed
    assert "6 not run (their port did not load; not counted): " in page


def test_a_survivor_gets_a_row_in_the_open_and_the_score_fails():
    run = _load(RUN)
    run["mutants"][0].update(status="survived", killed_by="", message="")
    blocks = mutants.page_blocks(run)
    assert blocks[0].mark == "fail"
    assert blocks[0].text.startswith("Mutation score: 60/61 killed · not killed: ")
    open_table = blocks[1]
    assert open_table.keys == [run["mutants"][0]["name"]]
    assert not open_table.collapsed
    assert blocks[-1].collapsed
    assert len(blocks[-1].keys) == 60


def test_the_precision_picture_window_fits_its_points():
    points = pictures.bit_points(_load(COMPARE))
    assert 20 < min(points) < max(points) < 24  # float32 ports
    left, right = pictures.bits_window(points)
    assert left <= min(points)
    assert max(points) <= right
    assert right - left <= 7  # the points fill it: no empty stretch from 5 bits
    assert pictures.bits_window([8.4, *points])[0] <= 8.4  # a bfloat16 port is in it too
    assert pictures.bits_window([pictures.EXACT_AT, 22.0])[1] > pictures.EXACT_AT


# ---------------------------------------------------------------------------
# The page's HTML, without a browser
# ---------------------------------------------------------------------------


class _Tables(HTMLParser):
    """Each <table>: its classes, whether it sits in a `.scroll` box, its header cells' text
    (the words a phone cannot break: `_<wbr>` breaks), and each row's cells' text."""

    def __init__(self):
        super().__init__()
        self.tables, self._stack, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        self._stack.append((tag, classes))
        if tag == "table":
            boxed = any(t == "div" and "scroll" in c for t, c in self._stack[:-1])
            self.tables.append({"classes": classes, "boxed": boxed, "head": [], "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th") and self.tables:
            self._cell = {"tag": tag, "label": attrs.get("data-label"), "parts": [""]}
        elif tag == "wbr" and self._cell is not None:
            self._cell["parts"].append("")
        elif tag in ("br", "small") and self._cell is not None:
            self._cell["parts"].append("\n")

    def handle_endtag(self, tag):
        while self._stack and self._stack.pop()[0] != tag:
            pass
        if tag in ("td", "th") and self._cell is not None:
            table = self.tables[-1]
            if self._cell["tag"] == "th" and not table["rows"][1:]:
                table["head"].append(self._cell)
            else:
                table["rows"][-1].append(self._cell)
            self._cell = None

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self._stack.pop()

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["parts"][-1] += data


def _longest_word(cell) -> int:
    words = [w for part in cell["parts"] for w in re.split(r"\s+", part) if w]
    return max((len(w) for w in words), default=0)


#: A phone's width in CSS pixels, and what a grid's character is at its 0.72em of 14 px, in a
#: sans serif (about 0.6 em a character, an upper bound for these words and marks).
PHONE, CHARACTER, PADDING, FIRST_COLUMN = 390, 0.72 * 14 * 0.6, 6, 8.5 * 0.72 * 14


def test_every_table_sits_in_its_own_box_and_the_non_grids_stack_on_a_phone(report):
    parsed = _Tables()
    parsed.feed(report.html)
    assert len(parsed.tables) > 10
    for table in parsed.tables:
        assert table["boxed"], table["classes"]
        if "stack" in table["classes"]:  # a phone shows each field under its column's name
            assert all(c["label"] for row in table["rows"] for c in row if c["tag"] == "td")
        else:
            assert set(table["classes"]) & {"details", *html.GRIDS}, table["classes"]
    assert "table.stack td[data-label]::before" in html.CSS
    assert ":is(table.matrix, table.summary, table.policies, table.compositions)" in html.CSS


@pytest.mark.parametrize("kind", html.GRIDS)
def test_each_grid_fits_a_phone_by_its_longest_words(report, kind):
    # On a phone a grid hides each cell's note (`small`) and breaks headings at `_` and
    # spaces: its narrowest width is its columns' longest words, which must fit 390 px.
    parsed = _Tables()
    parsed.feed(report.html)
    (table,) = [t for t in parsed.tables if kind in t["classes"]]
    shown = table["head"][:-1] if kind == "matrix" else table["head"]  # wall: hidden
    widths = []
    for index, heading in enumerate(shown):
        cells = [row[index] for row in table["rows"] if len(row) == len(table["head"])]
        texts = [{**c, "parts": c["parts"][:1]} for c in cells]  # the note hidden
        longest = max(_longest_word(c) for c in [heading, *texts])
        widths.append(FIRST_COLUMN if index == 0 else longest * CHARACTER + PADDING)
    assert sum(widths) <= PHONE, (kind, [round(w) for w in widths])


def test_the_schedules_name_each_framework_s_peak_method_once_under_the_table():
    data = json.loads((ROOT / "docs" / "bench-schedules.json").read_text())
    (section,) = [s for s in build([data], pictures=False).sections if s.anchor.startswith("bench")]
    table = section.tables[0]
    assert "peak method" not in table.header
    assert len(table.rows) == len(data["results"])
    said = table.note
    assert said.startswith("peak measured by ")
    assert said.endswith(".")
    said, _, unseen = said.removesuffix(".").partition(" · not observable on rows of ")
    counts = {}  # the rows whose peak is not observable, counted per framework
    for result in data["results"]:
        if result["peak_method"].startswith("not observable: "):
            counts[result["framework"]] = counts.get(result["framework"], 0) + 1
    assert unseen.startswith(", ".join(f"{name} {n}" for name, n in counts.items()))
    named: list[tuple[str, str]] = []  # (framework, method), as often as the note names it
    for part in said.removeprefix("peak measured by ").split("; "):
        frameworks, method = part.split(": ", 1)
        named += [(framework, method) for framework in frameworks.split(", ")]
    frameworks = [framework for framework, _ in named]
    assert len(frameworks) == len(set(frameworks)), f"a framework named twice: {said}"
    methods = dict(named)
    for result in data["results"]:  # each framework named once, with its method
        if not result["peak_method"].startswith("not observable: "):
            assert methods[result["framework"]] == result["peak_method"]


def test_compare_s_machine_is_its_cores_and_load_never_not_recorded():
    compare = _load(COMPARE)
    (machine,) = [t for s in build([compare], pictures=False).sections for t in s.tables
                  if t.kind == "machine"]  # fmt: skip
    said = machine.rows[0].cells[2].text
    assert "not recorded" not in said
    assert f", {compare['machine']['cores']} cores, Python " in said
    assert " · load (1-minute average) " in said
    assert f"{compare['load']['before']:.1f} before" in said


def test_the_matmul_settings_are_one_heading_and_a_line_each(report):
    page = report.html
    assert page.count("float32 matmul setting") == 1
    start = page.index("float32 matmul setting")
    listed = page[start : page.index("</ul>", start)]
    ports = [r for r in _load(COMPARE)["ports"] if r["state"] == "available"]
    settings = {json.dumps(r.get("matmul_precision"), sort_keys=True) for r in ports}
    assert listed.count("<li>") == len(settings) > 1
