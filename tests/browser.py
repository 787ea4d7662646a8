"""Open an HTML file in headless Chromium, with no Python dependency: the browser's own flags.

`check(html)` copies the page with a small script added at the top of
`<head>`: it records every error event (a script error, an image or other
resource that fails to load) and, on `load`, writes into the DOM a JSON
summary: each image's `naturalWidth`, the ids of the matrix rows, the
errors. `--dump-dom` prints the DOM after the load, so the summary comes
back on stdout; `--enable-logging=stderr --v=0` prints every console
message the page produces as an `INFO:CONSOLE` line on stderr, which the
report (a page with no script of its own) should never produce.
`screenshot(html, png)` saves a picture of the page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
# Root needs --no-sandbox; headless needs no GPU. Nothing here reaches the network:
# the page is a local file and its images are data URLs.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-extensions",
    "--virtual-time-budget=5000",
)

PROBE = """<script>
(function () {
  var errors = [];
  window.addEventListener("error", function (event) {
    var target = event.target || {};
    errors.push(event.message || ("failed to load " + (target.tagName || "?") + " "
                                  + String(target.src || target.href || "").slice(0, 60)));
  }, true);
  window.addEventListener("load", function () {
    var images = Array.prototype.map.call(document.images, function (img) {
      return {alt: img.alt, complete: img.complete, naturalWidth: img.naturalWidth};
    });
    var rows = Array.prototype.map.call(
      document.querySelectorAll("tr[id^='matrix-']"), function (row) { return row.id; });
    var out = document.createElement("pre");
    out.id = "browser-check";
    out.textContent = JSON.stringify({images: images, matrix_rows: rows, errors: errors});
    document.body.appendChild(out);
  });
})();
</script>"""
CONSOLE = re.compile(r":INFO:CONSOLE[^\]]*\] (.*)")


@dataclass
class Checked:
    """What the browser saw: images, matrix row ids, error events and console lines."""

    images: list[dict]
    matrix_rows: list[str]
    errors: list[str]
    console: list[str]
    returncode: int


def find() -> str | None:
    """The Chromium executable (`$CHROMIUM` first), or None."""
    wanted = os.environ.get("CHROMIUM")
    if wanted:
        return shutil.which(wanted)
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(executable: str, args: list[str], profile: Path, timeout: float):
    command = [executable, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def check(html: Path, scratch: Path, executable: str, timeout: float = 180) -> Checked:
    """Load `html` (a copy with `PROBE` added) and read back what the page saw."""
    page = html.read_text(encoding="utf-8")
    head = page.index("<head>") + len("<head>")
    probed = scratch / f"probed-{html.name}"
    probed.write_text(page[:head] + PROBE + page[head:], encoding="utf-8")
    done = _run(
        executable,
        ["--enable-logging=stderr", "--v=0", "--dump-dom", probed.as_uri()],
        scratch / "profile-check",
        timeout,
    )
    match = re.search(r'<pre id="browser-check">(.*?)</pre>', done.stdout, re.S)
    if match is None:
        raise AssertionError(
            f"the page's check never ran (exit {done.returncode}): {done.stderr[-2000:]}"
        )
    text = match.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    found = json.loads(text.replace("&amp;", "&"))
    console = [m.group(1) for m in CONSOLE.finditer(done.stderr)]
    return Checked(found["images"], found["matrix_rows"], found["errors"], console, done.returncode)


def screenshot(
    html: Path,
    png: Path,
    scratch: Path,
    executable: str,
    size: tuple[int, int] = (1300, 2400),
    timeout: float = 180,
) -> None:
    """Save a screenshot of `html`, `size` pixels (the top of a long page)."""
    done = _run(
        executable,
        [f"--window-size={size[0]},{size[1]}", f"--screenshot={png}", html.as_uri()],
        scratch / "profile-shot",
        timeout,
    )
    if done.returncode != 0 or not png.exists():
        raise AssertionError(f"no screenshot (exit {done.returncode}): {done.stderr[-2000:]}")
