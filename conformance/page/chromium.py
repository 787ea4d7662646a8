"""Look at the report in headless Chromium: a small DevTools-protocol client over a pipe.

No Python dependency: Chromium started with `--remote-debugging-pipe` reads
DevTools commands on file descriptor 3 and writes answers and events on 4,
each a JSON message ending in a NUL byte. `Browser` opens one page, and for
each width asked (`look(width)`) reports what a reader would meet: whether the
body scrolls sideways, which tables scroll sideways in their boxes, which images failed to
decode, the console errors and
uncaught exceptions, every grid row's id, the pictures' alt texts, the
headings; `screenshot(path)` saves what is shown. The tests, and
`tools/report_screenshots.py` that makes docs/report.png and
docs/report-phone.png, share it.

Nothing reaches the network: the page is a local file whose images are data
URLs, and the flags turn off Chromium's own background connections.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",  # root in CI needs it
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)
DESKTOP, PHONE = 1400, 390

#: Run in the page: what a reader would meet at this width.
PROBE = """(() => {
  const root = document.documentElement;
  const wide = [];
  for (const element of document.body.querySelectorAll("*")) {
    const box = element.getBoundingClientRect();
    if (box.right > root.clientWidth + 1 && !element.closest(".scroll")) {
      wide.push(element.tagName.toLowerCase() + (element.id ? "#" + element.id : "")
                + (element.className ? "." + String(element.className).split(" ")[0] : ""));
    }
  }
  // A visible box whose table is wider than it (it scrolls sideways); a picture's box may
  // pan on a phone, by design, and is left out.
  const scrolling = [];
  for (const box of document.querySelectorAll(".scroll")) {
    if (!box.checkVisibility() || box.classList.contains("picture")) continue;
    if (box.scrollWidth > box.clientWidth + 1) {
      const table = box.querySelector("table");
      scrolling.push((table ? "table." + table.className.split(" ")[0] : "div")
                     + " " + box.scrollWidth + " > " + box.clientWidth + " px");
    }
  }
  return JSON.stringify({
    width: root.clientWidth,
    scrolling: scrolling.slice(0, 20),
    scroll_width: Math.max(root.scrollWidth, document.body.scrollWidth),
    too_wide: wide.slice(0, 20),
    images: Array.from(document.images).map(img => ({
      alt: img.alt, complete: img.complete, natural_width: img.naturalWidth,
      shown_width: img.getBoundingClientRect().width})),
    rows: Array.from(document.querySelectorAll("tr[id]"))
      .map(row => row.id).filter(id => /^(matrix|policies)-/.test(id)),
    headings: Array.from(document.querySelectorAll("h1, h2, h3"))
      .map(h => h.tagName.toLowerCase() + " " + h.textContent.trim()),
    contents: document.querySelectorAll("nav.toc a").length,
    details: document.querySelectorAll("details").length,
  });
})()"""


class BrowserError(RuntimeError):
    """Chromium would not start, answer or load the page."""


@dataclass
class Look:
    """What the page showed at one width."""

    width: int
    scroll_width: int
    too_wide: list[str]
    scrolling: list[str]
    images: list[dict[str, Any]]
    rows: list[str]
    headings: list[str]
    contents: int
    details: int
    errors: list[str] = field(default_factory=list)

    @property
    def scrolls_sideways(self) -> bool:
        return self.scroll_width > self.width + 1

    @property
    def broken_images(self) -> list[str]:
        return [i["alt"][:60] for i in self.images if not i["complete"] or not i["natural_width"]]


#: Run by `python -I -S -c`: fds argv[1] and argv[2] to 3 and 4, then exec argv[3:].
_MOVE_AND_EXEC = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
    "os.close(int(sys.argv[1])); os.close(int(sys.argv[2])); os.execvp(sys.argv[3], sys.argv[3:])"
)


def _high(pair: tuple[int, int]) -> tuple[int, int]:
    """Both descriptors moved to numbers of 10 or more, close-on-exec."""
    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in pair)
    for fd in pair:
        os.close(fd)
    return moved


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


class Browser:
    """One headless Chromium and one page in it; close it (or use `with`)."""

    def __init__(self, executable: str | None = None, timeout: float = 120.0):
        executable = executable or find()
        if executable is None:
            raise BrowserError("no Chromium found (chromium, chromium-browser, google-chrome)")
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="report-chromium-")
        # The pipes' ends Chromium gets sit above 10 here (so that moving them to 3 and 4
        # cannot overwrite one with the other), and a bare interpreter moves them to 3 and 4,
        # then becomes Chromium. Not a `preexec_fn`: Python code between fork and exec runs
        # the fork handlers of this process, which may hold JAX's threads (JAX warns of a
        # deadlock there); a plain fork and exec runs none.
        to_browser_read, self._to_browser = _high(os.pipe())
        self._from_browser, from_browser_write = _high(os.pipe())
        pipes = [str(to_browser_read), str(from_browser_write)]
        browser = [executable, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"]
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _MOVE_AND_EXEC, *pipes, *browser],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_browser_read, from_browser_write),  # the rest close
            start_new_session=True,  # its helpers (zygotes, crashpad) in one group, to stop
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next = 0
        self._events: list[dict[str, Any]] = []
        self.errors: list[str] = []
        try:
            target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            attached = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
            self._session = attached["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                self.send(f"{domain}.enable", session=True)
        except Exception:
            self.close()
            raise

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    # -- the protocol ---------------------------------------------------------------

    def send(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        """Send one command and wait for its answer (events met meanwhile are kept)."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            found = self._read()
            if found.get("id") == self._next:
                if "error" in found:
                    raise BrowserError(f"{method}: {found['error'].get('message')}")
                return found.get("result", {})
            self._event(found)

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError(f"Chromium did not answer within {self.timeout:.0f} s")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed its pipe (exit {self._process.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _event(self, event: dict[str, Any]) -> None:
        method, params = event.get("method", ""), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            self.errors.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            shown = details.get("exception", {}).get("description") or details.get("text", "")
            self.errors.append(f"exception: {shown}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"{entry.get('source', 'log')}: {entry.get('text', '')}")
        self._events.append(event)

    def _wait_for(self, method: str) -> None:
        while not any(e.get("method") == method for e in self._events):
            self._event(self._read())

    # -- what a reader does ---------------------------------------------------------

    def open(self, page: Path, width: int = DESKTOP, height: int = 900) -> None:
        """Load `page` at `width` CSS pixels (a phone's, with touch, under 600)."""
        self.resize(width, height)
        self._events.clear()
        self.send("Page.navigate", {"url": Path(page).resolve().as_uri()}, session=True)
        self._wait_for("Page.loadEventFired")
        self.evaluate("document.fonts.ready.then(() => true)")

    def resize(self, width: int, height: int = 900) -> None:
        """Lay the page out again at `width` (no reload: the same page, another window)."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
            session=True,
        )

    def evaluate(self, expression: str) -> Any:
        found = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=True,
        )
        if "exceptionDetails" in found:
            raise BrowserError(f"the probe failed: {found['exceptionDetails'].get('text')}")
        return found["result"].get("value")

    def look(self, width: int) -> Look:
        """What the open page shows at `width`, with every error met so far."""
        self.resize(width)
        found = json.loads(self.evaluate(PROBE))
        return Look(**found, errors=list(self.errors))

    def screenshot(self, path: Path, width: int, height: int, top: str | None = None) -> Path:
        """Save `height` pixels of the page at `width`, from its top or from the element
        `top` (a CSS selector) on; the whole page's layout, not only the window's."""
        self.resize(width, height)
        y = 0.0
        if top is not None:
            y = float(
                self.evaluate(
                    f"(() => {{ const e = document.querySelector({json.dumps(top)}); "
                    "return e ? e.getBoundingClientRect().top + window.scrollY : 0; })()"
                )
            )
        shot = self.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": y, "width": width, "height": height, "scale": 1},
            },
            session=True,
        )
        path = Path(path)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        """Stop Chromium (its own process group's children go with it) and forget its files."""
        for descriptor in (
            getattr(self, "_to_browser", None),
            getattr(self, "_from_browser", None),
        ):
            if descriptor is not None:
                with contextlib.suppress(OSError):
                    os.close(descriptor)
        self._to_browser = self._from_browser = None
        socket_folder = _singleton_folder(self._profile.name)
        process = getattr(self, "_process", None)
        if process is not None:
            _stop_group(process)
        self._profile.cleanup()
        if socket_folder is not None:
            shutil.rmtree(socket_folder, ignore_errors=True)


def _singleton_folder(profile: str) -> str | None:
    """The folder Chromium made in TMPDIR for its singleton socket (the profile links to the
    socket), which it leaves behind when stopped; None if there is none."""
    with contextlib.suppress(OSError):
        folder = os.path.dirname(os.readlink(os.path.join(profile, "SingletonSocket")))
        if os.path.basename(folder).startswith("org.chromium.Chromium."):
            return folder
    return None


def _stop_group(process: subprocess.Popen) -> None:
    """Stop Chromium and every helper of its process group, and wait until none is left:
    a helper still running writes into the profile while it is being removed."""
    for signal_number in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal_number)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(process.pid, 0)  # anyone of the group still there?
            except ProcessLookupError:
                return
            time.sleep(0.05)
    process.wait()
