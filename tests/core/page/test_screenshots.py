"""docs/report.png and docs/report-phone.png show the page as its code draws it today.

`tools/report_screenshots.py` writes, beside the screenshots, the digest of the code that
decides what the page looks like (`PAGE_CODE`) and of each screenshot; this recomputes both.
When the page's code changes, the screenshots are older than it: run the tool again."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil

import pytest

from tests.support.helpers import ROOT

DOCS = ROOT / "docs"


def _tool():
    spec = importlib.util.spec_from_file_location(
        "report_screenshots", ROOT / "tools" / "report_screenshots.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


def _said() -> dict:
    return json.loads((DOCS / TOOL.DIGEST).read_text())


def test_the_screenshots_are_newer_than_the_page_code():
    said = _said()
    assert said["page_code"] == list(TOOL.PAGE_CODE)
    assert said["page_code_sha256"] == TOOL.page_digest(), (
        "docs/report.png and docs/report-phone.png are older than the page's code "
        f"({', '.join(TOOL.PAGE_CODE)}): run python tools/report_screenshots.py"
    )


def test_the_screenshots_are_the_ones_the_tool_saved_at_both_widths():
    said = _said()
    for name, width, _height, _top in TOOL.SHOTS:
        data = (DOCS / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == said["screenshots"][name], name
        assert int.from_bytes(data[16:20], "big") == width  # the PNG header's width


def test_every_file_of_the_page_code_exists_and_a_change_to_one_changes_the_digest(tmp_path):
    for name in TOOL.PAGE_CODE:
        copy = tmp_path / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, copy)
    assert TOOL.page_digest(tmp_path) == TOOL.page_digest()
    edited = tmp_path / "conformance" / "page" / "html.py"
    edited.write_text(edited.read_text().replace("max-width: 1400px", "max-width: 1300px"))
    assert TOOL.page_digest(tmp_path) != TOOL.page_digest()


@pytest.mark.parametrize(
    "name", ["page/sections.py", "page/kinds.py", "tables/kinds/compare_grids.py", "page/html.py"]
)
def test_the_page_code_covers_what_draws_the_page(name):
    assert f"conformance/{name}" in TOOL.PAGE_CODE
