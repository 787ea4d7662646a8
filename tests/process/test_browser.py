"""The tfjs port in a real browser: headless Chromium checks the golden vectors with the port's
own code (init.js, mlp.js) under tfjs's browser bundle, and reports pass or fail per vector and
check into the page; this test reads the page back (`--dump-dom`).

The expected values are the golden vectors (the canonical port's answers, committed), never the
port's. Skips, with the reason, where Chromium or Node (which installs tfjs) is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from conformance.checking.vectors import committed_manifest
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out); the full tier's.
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="needs Debian's chromium: runs the tfjs port in a headless browser"),
]

TFJS = ROOT / "implementations" / "stacks" / "tfjs"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="module")
def chromium() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"no headless browser on PATH (looked for {', '.join(BROWSERS)})")


def golden_script(path: Path) -> int:
    """Write the committed golden vectors as `window.GOLDEN = {...}` (a file:// page cannot
    fetch JSON); return how many vectors."""
    manifest_path = committed_manifest()
    manifest = json.loads(manifest_path.read_text())
    arrays = np.load(manifest_path.with_name(manifest["npz"]))
    vectors = []
    for entry in manifest["vectors"]:
        vector = {k: entry[k] for k in ("id", "kind", "dim", "features")}
        vector["seed"] = entry.get("seed")
        for key in arrays.files:
            if key.startswith(entry["prefix"]):
                # float32 -> Python float is exact, and JSON keeps it (repr round-trips).
                vector[key.removeprefix(entry["prefix"])] = arrays[key].ravel().tolist()
        vectors.append(vector)
    data = {"init_ulps": manifest["tolerance"]["init_ulps"], "vectors": vectors}
    path.write_text("window.GOLDEN = " + json.dumps(data) + ";\n")
    return len(vectors)


class Rows(HTMLParser):
    """The result rows (`<tr class="pass|fail">`) and the status paragraph of a dumped page."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self.status = ""
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_status = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and attrs.get("class") in ("pass", "fail"):
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []
        elif tag == "p" and attrs.get("id") == "status":
            self._in_status = True

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag == "p":
            self._in_status = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_status:
            self.status += data


@pytest.mark.timeout(600)
def test_the_golden_vectors_pass_in_headless_chromium(chromium, node, tmp_path):
    bundle = subprocess.run(
        [node, str(TFJS / "port.js"), "--print-tfjs-dist"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    tfjs = json.loads(bundle.stdout)
    assert tfjs["tfjs"] == "4.22.0"
    count = golden_script(tmp_path / "golden.js")
    page = (TFJS / "browser" / "page.html").read_text()
    urls = {
        "TFJS": Path(tfjs["bundle"]),
        "INIT": TFJS / "init.js",
        "MLP": TFJS / "mlp.js",
        "GOLDEN": tmp_path / "golden.js",
        "CHECK": TFJS / "browser" / "check.js",
    }
    for key, path in urls.items():
        page = page.replace("{{" + key + "}}", path.resolve().as_uri())
    (tmp_path / "page.html").write_text(page)
    result = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=120000",
            "--dump-dom",
            (tmp_path / "page.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    rows = Rows()
    rows.feed(result.stdout)
    assert rows.status.startswith("done"), (rows.status, result.stderr[-2000:])
    failed = [row for row in rows.rows if "fail" in row[2]]
    assert not failed, failed
    seeded = sum(1 for row in rows.rows if row[1] == "init")
    # Every vector has forward and vjp; the seeded ones also init and nn_checkpoint_forward.
    assert len(rows.rows) == 2 * count + 2 * seeded
    assert re.match(rf"done: {len(rows.rows)} passed, 0 failed \(tfjs 4\.22\.0, cpu", rows.status)
