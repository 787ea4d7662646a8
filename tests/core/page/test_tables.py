"""The table model and its renderers: any document drawn by each, hostile data kept inert."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from conformance.tables import numbers
from conformance.tables.model import (
    MARKS,
    Cell,
    Column,
    Document,
    Items,
    Paragraph,
    Row,
    Section,
    Table,
    TableBuilder,
)
from conformance.tables.render import csv as csv_render
from conformance.tables.render import html as html_render
from conformance.tables.render import markdown as markdown_render
from conformance.tables.render import terminal as terminal_render
from conformance.terminal import style as terminal_style
from tests.support.helpers import ROOT

HOSTILE = ("<script>alert(1)</script>", "</details>", "<img src=x onerror=y>", "a|b")


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def hostile_document() -> Document:
    """Every place data can reach: titles, headings, cells, notes, links, captions, lists."""
    builder = TableBuilder(
        HOSTILE[0],
        [Column(HOSTILE[1]), Column("n", align="right", number="count")],
        caption=HOSTILE[2],
        kind="hostile",
    )
    builder.heading(HOSTILE[3])
    for text in HOSTILE:
        builder.add(
            [Cell(text, "fail", note=text, link=text, title=text), Cell(text, "pass")], key=text
        )
    return Document(
        "hostile",
        HOSTILE[0],
        (
            Section(
                HOSTILE[1],
                (builder.build(), Paragraph(HOSTILE[2], "warn"), Items(HOSTILE[3], HOSTILE)),
            ),
        ),
    )


def test_markdown_escapes_html_and_pipes_in_every_cell():
    text = markdown_render.document(hostile_document())
    for raw in ("<script", "</details", "<img", "a|b"):
        assert raw not in text, raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "a\\|b" in text
    # Every table line has exactly as many unescaped pipes as the table has columns + 1.
    for line in text.splitlines():
        if line.startswith("| "):
            assert line.replace("\\|", "").count("|") == 3, line


def test_html_escapes_every_string():
    found = hostile_document().tables[0]
    text = html_render.table(found, HOSTILE[1])
    for raw in ("<script", "</details>", "<img", 'onerror=y"'):
        assert raw not in text.replace("</details></", ""), raw
    assert "&lt;script&gt;" in text
    assert text.count("<tr data-key=") == len(HOSTILE)


def test_terminal_prints_hostile_text_as_text():
    terminal_style.configure(width=200)
    try:
        out = Pipe()
        terminal_render.print_document(terminal_style.console(file=out), hostile_document())
    finally:
        terminal_style.configure()
    text = out.getvalue()
    for raw in HOSTILE:  # rich markup in data is shown, not read as markup
        assert raw in text, raw
    assert "[/]" not in text


def test_csv_keeps_each_cell_whole():
    text = csv_render.table(hostile_document().tables[0])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == [HOSTILE[1], "n"]
    assert rows[1] == [HOSTILE[3], ""]  # the group heading, its own row
    assert [r[1] for r in rows[2:]] == list(HOSTILE)
    assert rows[2][0] == f"{HOSTILE[0]} {HOSTILE[0]}"  # the text, then its note


def test_a_row_must_have_a_cell_per_column_and_a_known_mark():
    with pytest.raises(ValueError, match="rows\\[0\\]: 1 cells for 2 columns"):
        Table("t", (Column("a"), Column("b")), (Row((Cell("only one"),)),))
    builder = TableBuilder("t", ["a", "b"])
    builder.add(["only one"])
    with pytest.raises(ValueError, match="rows\\[0\\]"):
        builder.build()
    with pytest.raises(ValueError, match="mark: 'shiny'"):
        Cell("x", "shiny")
    with pytest.raises(ValueError, match="align: 'middle'"):
        Column("x", align="middle")


def test_every_mark_has_a_style_in_every_renderer():
    # A new mark (a state such as not-installed) needs a tone, and every tone is drawn.
    for mark, tone in MARKS.items():
        assert tone in terminal_render.TONE_STYLES, mark
        cell = Cell("x", mark)
        assert "x" in html_render.cell(cell)
        assert "x" in markdown_render._cell(cell)


def test_markdown_aligns_columns_as_the_model_says():
    builder = TableBuilder("", [Column("a"), Column("b", "right"), Column("c", "center")])
    builder.add(["1", "2", "3"])
    lines = markdown_render.table(builder.build())
    assert lines[1] == "| --- | --: | :-: |"


@pytest.mark.parametrize(
    ("value", "spelled"),
    [
        (None, ""),
        (0, "0"),
        (0.0004, "<0.001"),
        (0.1234, "0.123"),
        (1.0, "1.000"),
        ("inf", "inf"),
        ("nan", "nan"),
        (float("inf"), "inf"),
    ],
)
def test_one_spelling_of_a_ratio(value, spelled):
    assert numbers.ratio(value) == spelled


def test_ratio_digits_set_the_tiny_threshold():
    assert numbers.ratio(0.004, digits=2) == "<0.01"
    assert numbers.ratio(0.004, digits=3) == "0.004"


def test_bytes_and_seconds():
    assert numbers.kib(128) == "0.125"
    assert numbers.mib(3 * 2**20) == "3.00"
    assert numbers.size(100) == "100 B"
    assert numbers.size(1536) == "1.5 KiB"
    assert numbers.grouped(1048576) == "1,048,576"
    assert numbers.ms(0.0123) == "12.3"
    assert numbers.ms(float("nan")) == "?"
    assert numbers.seconds(2.5) == "2.50 s"
    assert numbers.seconds(0.012) == "12 ms"
    assert numbers.number("inf") == float("inf")
    assert numbers.number(True) is None


# ---------------------------------------------------------------------------
# How every table looks is one change in one place: the renderers
# ---------------------------------------------------------------------------

RENDERERS = ROOT / "conformance" / "tables" / "render"
#: What drawing a table looks like in source: rich's table and box styles, a Markdown
#: table's pipes and rules, a Markdown heading or picture written by hand.
TABLE_WRITING = re.compile(
    r"rich\.table|from rich import box|\"\| |\" \|\"|\"\|---|\" \| \"|---:|:-:"
    r"|f?\"#{1,6} |f?\"!\["
)


def test_only_the_renderers_draw_tables():
    offenders = []
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        if RENDERERS in path.parents:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if TABLE_WRITING.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_check_finds_table_writing():
    # The pattern above is not vacuous: each way a writer drew a table before is caught.
    for line in (
        "from rich.table import Table",
        "from rich import box",
        'lines.append("| " + " | ".join(header) + " |")',
        'lines.append("|---|---|")',
        'rule = ["---:" if numeric else "---"]',
        'lines = [f"## {title}", ""]',
        'lines += [f"![{title}]({path})"]',
    ):
        assert TABLE_WRITING.search(line), line


def test_no_html_from_a_report_passes_through_any_markdown():
    # A hostile port name and message in a run report: the report page's Markdown, the merged
    # matrix (a CI job summary) and the run's own --markdown escape them.
    from conformance import merge
    from conformance.page import build

    data = json.loads((ROOT / "tests" / "data" / "report" / "run.json").read_text())
    port = data["ports"][0]
    port["name"], port["framework"] = HOSTILE[0], HOSTILE[1]
    port["outcomes"][0].update(status="fail", message=f"{HOSTILE[2]}\n{HOSTILE[3]}")
    merged = merge.markdown(merge.combine([merge.Source(1, HOSTILE[3], data)]))
    page = build([data], pictures=False).markdown
    for text in (merged, page):
        for raw in ("<script", "</details", "<img"):
            assert raw not in text, raw
        assert "&lt;script&gt;" in text


def test_every_report_names_its_kind_and_the_reader_holds_it_to_its_fields():
    from conformance.benchmark import BenchReport, policies, scale, schedules
    from conformance.benchmark.measure import Settings
    from conformance.comparison.model import Comparison
    from conformance.running.results import SuiteReport, to_json
    from conformance.tables.reports import kind_of

    written = {
        "run": to_json(SuiteReport("dev", 1, "menu", "flax_linen", [], None)),
        "compare": Comparison(0, 4, 3, "flax_linen", []).to_json(),
        "bench": BenchReport(Settings(depths=(1,))).to_json(),
        "bench-policies": policies.report_data(Settings(depths=(1,)), {}, [], {}),
        "bench-schedules": schedules.report_data(Settings(depths=(1,)), {}, [], {}),
        "scale": scale.report_data([], scale.ScaleSettings(), {}),
    }
    for kind, data in written.items():
        assert data["kind"] == kind
        assert kind_of(data) == kind
        assert kind_of({k: v for k, v in data.items() if k != "kind"}) == kind  # older files
        assert kind_of({**data, "kind": "bench" if kind != "bench" else "run"}) is None
