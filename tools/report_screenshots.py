"""Regenerate docs/report.png and docs/report-phone.png: the report of a real run, in Chromium.

    python tools/report_screenshots.py
        runs `python -m conformance report --make run --make compare --make bench
        --profile dev` (the bench's quick sweep), then opens the page in headless
        Chromium at 1400 and 390 CSS pixels and saves both screenshots into docs/;
    python tools/report_screenshots.py --reports run.json compare.json bench.json
        the same from reports already made (the test does this with tests/data/report).

Before it saves anything it checks what the issue asks of the page at both
widths: the body never scrolls sideways, every image decodes, no console
error, a grid row for every port; it exits 1 (saving nothing) when one fails.
`--out DIR` writes elsewhere; `--keep DIR` keeps the page and its reports.
Needs Chromium (`apt-get install chromium`; `$CHROMIUM` names another).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.page import build, chromium  # noqa: E402

DOCS = ROOT / "docs"
#: (file, width, height, the element the picture starts at: None for the page's top)
SHOTS = (
    ("report.png", chromium.DESKTOP, 1900, None),
    ("report-phone.png", chromium.PHONE, 1500, "section[id^='run-']"),
)


def make_page(scratch: Path) -> Path:
    """Run the report command as a new user would; the page it wrote."""
    page = scratch / "report.html"
    command = [
        sys.executable, "-m", "conformance", "report",
        "--make", "run", "--make", "compare", "--make", "bench",
        "--profile", "dev", "--out", str(page), "--save-reports", str(scratch / "reports"),
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
        found += [f"{width} px: the image does not decode: {a}" for a in look.broken_images]
        found += [f"{width} px: {error}" for error in look.errors]
        found += [f"{width} px: a picture without alt text" for i in look.images if not i["alt"]]
        if 'id="matrix-' in text and not any(r.startswith("matrix-") for r in look.rows):
            found.append(f"{width} px: no conformance grid rows")
    return found


def screenshots(page: Path, out: Path, executable: str | None = None) -> list[Path]:
    """Check the page, then save both screenshots into `out`; RuntimeError naming what is
    wrong with the page."""
    out.mkdir(parents=True, exist_ok=True)
    with chromium.Browser(executable) as browser:
        wrong = problems(page, browser)
        if wrong:
            raise RuntimeError("the page is not fit to show:\n  " + "\n  ".join(wrong))
        return [
            browser.screenshot(out / name, width, height, top) for name, width, height, top in SHOTS
        ]


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
