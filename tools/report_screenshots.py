"""Regenerate docs/report.png and docs/report-phone.png: the report of a real run, in Chromium.

    python tools/report_screenshots.py
        runs `python -m conformance report --make run --make compare --make schedules
        --profile dev` (the schedules bench's quick sweep; a few minutes on two cores), then
        opens the page in headless Chromium at 1400 and 390 CSS pixels and saves both
        screenshots into docs/, with the digest of the page's code they show
        (docs/report-screenshots.json);
    python tools/report_screenshots.py --reports run.json compare.json ...
        the same from reports already made (the browser tests do this with tests/data/report).

Before it saves anything it checks what the issue asks of the page at both
widths: the body never scrolls sideways, no table scrolls sideways in its box,
every image decodes, no console error, a grid row for every port; it exits 1
(saving nothing) when one fails. `--out DIR` writes elsewhere; `--keep DIR`
keeps the page and its reports. Needs Chromium (`apt-get install chromium`;
`$CHROMIUM` names another) and Playwright (`pip install -e '.[test]'`), which
tools/chromium.py points at it.

`PAGE_CODE` is the code that decides what the page looks like; the digest of it
is written beside the screenshots, and a fast test (tests/core/page/test_screenshots.py)
recomputes it: when the page's code changes, the screenshots are older than it, and the
test says to run this again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.page import build  # noqa: E402
from tools import chromium  # noqa: E402

DOCS = ROOT / "docs"
#: (file, width, height, the element the picture starts at: None for the page's top)
SHOTS = (
    ("report.png", chromium.DESKTOP, 1900, None),
    ("report-phone.png", chromium.PHONE, 1500, "section#summary"),
)
#: Where the digest of the page's code the screenshots show is kept, beside them.
DIGEST = "report-screenshots.json"
#: The code that decides what the page looks like (relative to the checkout): its sections, the
#: kinds' entries, the page's own tables and grids, pictures and HTML; not the browser client,
#: the CSV or the Markdown, nor the tables it shares with the terminal.
PAGE_CODE = (
    "conformance/page/__init__.py",
    "conformance/page/documents.py",
    "conformance/page/facts.py",
    "conformance/page/html.py",
    "conformance/page/kinds.py",
    "conformance/page/pictures.py",
    "conformance/page/sections.py",
    "conformance/tables/kinds/compare_grids.py",
    "conformance/tables/kinds/glance.py",
    "conformance/tables/kinds/mutants.py",
    "conformance/tables/kinds/plain.py",
    "conformance/tables/kinds/version_sets.py",
    "conformance/tables/render/html.py",
)
MAKE = ("--make", "run", "--make", "compare", "--make", "schedules", "--profile", "dev")


def page_digest(root: Path = ROOT) -> str:
    """SHA-256 over `PAGE_CODE`'s files, each its path then its bytes."""
    digest = hashlib.sha256()
    for name in PAGE_CODE:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return digest.hexdigest()


def make_page(scratch: Path) -> Path:
    """Run the report command as a new user would; the page it wrote."""
    page = scratch / "report.html"
    command = [
        sys.executable, "-m", "conformance", "report", *MAKE,
        "--out", str(page), "--save-reports", str(scratch / "reports"),
    ]  # fmt: skip
    print("report_screenshots: " + " ".join(command[1:]), file=sys.stderr)
    subprocess.run(command, check=True, cwd=ROOT)
    return page


def problems(page: Path, browser: chromium.Browser) -> list[str]:
    """What is wrong with the page at either width (empty: nothing)."""
    text = page.read_text(encoding="utf-8")
    found = []
    browser.open(page)
    for width in (chromium.DESKTOP, chromium.PHONE):
        look = browser.look(width)
        if look.scrolls_sideways:
            found.append(f"{width} px: the body scrolls sideways ({look.scroll_width} px wide)")
        found += [f"{width} px: an element wider than the page: {e}" for e in look.too_wide]
        found += [f"{width} px: a table scrolls sideways: {e}" for e in look.scrolling]
        found += [f"{width} px: the image does not decode: {a}" for a in look.broken_images]
        found += [f"{width} px: {error}" for error in look.errors]
        found += [f"{width} px: a picture without alt text" for i in look.images if not i["alt"]]
        if 'id="matrix-' in text and not any(r.startswith("matrix-") for r in look.rows):
            found.append(f"{width} px: no conformance grid rows")
    return found


def screenshots(page: Path, out: Path, executable: str | None = None) -> list[Path]:
    """Check the page, then save both screenshots into `out`, and the digest of the page's
    code beside them; RuntimeError naming what is wrong with the page."""
    out.mkdir(parents=True, exist_ok=True)
    with chromium.Browser(executable) as browser:
        wrong = problems(page, browser)
        if wrong:
            raise RuntimeError("the page is not fit to show:\n  " + "\n  ".join(wrong))
        written = [
            browser.screenshot(out / name, width, height, top) for name, width, height, top in SHOTS
        ]
    said = {
        "page_code_sha256": page_digest(),
        "page_code": list(PAGE_CODE),
        "screenshots": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in written},
        "made_by": "python tools/report_screenshots.py",
    }
    (out / DIGEST).write_text(json.dumps(said, indent=2) + "\n")
    return [*written, out / DIGEST]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", nargs="+", type=Path, help="reports already made")
    parser.add_argument("--out", type=Path, default=DOCS, help="where the PNGs go (docs/)")
    parser.add_argument("--keep", type=Path, help="keep the page (and made reports) here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="report-screenshots-") as scratch:
        where = args.keep or Path(scratch)
        where.mkdir(parents=True, exist_ok=True)
        if args.reports:
            page = where / "report.html"
            build(args.reports, html_path=page)
        else:
            page = make_page(where)
        try:
            written = screenshots(page, args.out)
        except RuntimeError as error:
            print(f"report_screenshots: {error}", file=sys.stderr)
            return 1
    print(json.dumps([str(p) for p in written]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
