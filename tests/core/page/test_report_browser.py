"""Today's page in headless Chromium at 1400 and 390 CSS pixels: nothing runs off the edge,
no table scrolls sideways in its box, and the grids are compact (full tier: Chromium is no
pip package; Playwright, of the `test` extra, drives it). The page is made of every kind
of report: tests/data/report's run-k.json and compare-k.json (see test_report_page.py),
its bench, policy-bench and scale reports, and the committed docs/bench-schedules.json;
one failed property opens its row's details."""

from __future__ import annotations

import json

import pytest

from conformance.page import build, html
from tests.support.helpers import ROOT
from tools import chromium

pytestmark = pytest.mark.slow(
    reason="needs Debian's chromium (apt-get install chromium): measures the page's widths"
)

DATA = ROOT / "tests" / "data" / "report"
REPORTS = (
    *(DATA / f"{name}.json" for name in ("compare-k", "bench", "bench-policies", "scale")),
    ROOT / "docs" / "bench-schedules.json",
)

#: Run in the page: every visible box (`.scroll`) that holds a table and scrolls sideways,
#: the pictures' boxes apart (a phone pans a picture to keep it readable), and each grid's
#: width, right edge and tallest row.
MEASURE = """(() => {
  const boxes = [];
  for (const box of document.querySelectorAll(".scroll")) {
    if (!box.checkVisibility() || box.classList.contains("picture")) continue;
    if (box.scrollWidth > box.clientWidth + 1) {
      const table = box.querySelector("table");
      boxes.push([table ? table.className : box.innerHTML.slice(0, 60), box.scrollWidth,
                  box.clientWidth]);
    }
  }
  const pictures = Array.from(document.querySelectorAll(".picture"))
    .map(box => [box.scrollWidth, box.clientWidth]);
  const grids = {};
  for (const kind of GRIDS) {
    const table = document.querySelector("table." + kind);
    if (!table) continue;
    const box = table.getBoundingClientRect();
    const rows = Array.from(table.querySelectorAll("tbody tr"));
    const height = row => row.getBoundingClientRect().height;
    const absent = row => row.cells.length > 1 && row.cells[1].innerText.trim() === "○";
    grids[kind] = {width: box.width, right: box.right, rows: rows.length,
                   tallest: Math.max(...rows.filter(row => !absent(row)).map(height)),
                   not_installed: Math.max(0, ...rows.filter(absent).map(height))};
  }
  return JSON.stringify({boxes, pictures, grids});
})()""".replace("GRIDS", json.dumps(list(html.GRIDS)))


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    found = chromium.find()
    if found is None:
        pytest.skip("no Chromium found (chromium, chromium-browser, google-chrome or $CHROMIUM)")
    pytest.importorskip("matplotlib")  # Playwright is not skipped: without it, Browser fails
    run = json.loads((DATA / "run-k.json").read_text())
    port = next(p for p in run["ports"] if p["name"] == "haiku")
    replay = "python -m conformance --reproduce 6.170.17:AXicc2Rw"
    port["outcomes"][2].update(status="fail", examples=3, message="VJP differs", replay=replay)
    run["failed"] = True
    page = tmp_path_factory.mktemp("browser") / "report.html"
    build([run, *REPORTS], html_path=page)
    with chromium.Browser(found) as browser:
        browser.open(page)
        return {
            width: (browser.look(width), json.loads(browser.evaluate(MEASURE)))
            for width in (chromium.DESKTOP, chromium.PHONE)
        }


@pytest.mark.parametrize("width", [chromium.DESKTOP, chromium.PHONE])
def test_nothing_runs_off_the_edge_and_no_table_scrolls_sideways(measured, width):
    look, found = measured[width]
    assert look.width == width
    assert not look.scrolls_sideways, (look.scroll_width, look.too_wide)
    assert look.too_wide == []
    assert look.errors == []
    assert look.broken_images == []
    assert found["boxes"] == []  # every visible table fits its box: no sideways scroll
    if width == chromium.DESKTOP:  # pictures shrink to the page; a phone pans them
        assert all(scroll <= shown + 1 for scroll, shown in found["pictures"])


@pytest.mark.parametrize("width", [chromium.DESKTOP, chromium.PHONE])
def test_every_grid_is_drawn_and_compact(measured, width):
    _, found = measured[width]
    grids = found["grids"]
    assert set(grids) == set(html.GRIDS)
    for kind, grid in grids.items():
        assert grid["right"] <= width, kind
        # A row is a line of marks and the notes under its port: its framework, and
        # "self-reported" where it is: three lines at most. A port not installed has its pip
        # command under it (`-c constraints.txt`, so that torch stays the CPU wheel), which a
        # phone wraps into three lines: four at most.
        assert grid["tallest"] <= (70 if width == chromium.DESKTOP else 50), (kind, grid)
        assert grid["not_installed"] <= (70 if width == chromium.DESKTOP else 60), (kind, grid)
    if width == chromium.DESKTOP:  # port x policy in one screen's width and height
        assert grids["policies"]["width"] <= 800
        assert grids["policies"]["rows"] == 16
        assert grids["summary"]["width"] <= 800
