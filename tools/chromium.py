"""Look at the report in headless Chromium, driven by Playwright (the `test` extra).

`Browser` starts Debian's `chromium` (never a downloaded one: Playwright is pointed at
the executable `find()` names) and opens one page; for each width asked (`look(width)`)
it reports what a reader would meet: whether the body scrolls sideways, which tables
scroll sideways in their boxes, which images failed to decode, the console errors and
uncaught exceptions, every grid row's id, the pictures' alt texts, the headings;
`screenshot(path)` saves what is shown. The browser tests and
`tools/report_screenshots.py` (docs/report.png and docs/report-phone.png) share it;
the package itself never starts a browser.

Nothing reaches the network: the page is a local file whose images are data URLs.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
DESKTOP, PHONE = 1400, 390
#: Under this width the page is shown as a phone shows it (Chromium's mobile emulation).
MOBILE_BELOW = 600

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
    """Chromium or Playwright is missing, or the page would not load."""


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
    """One headless Chromium and one page in it; close it (or use `with`).

    A phone (under `MOBILE_BELOW` px) and a desktop are two Playwright contexts, as mobile
    emulation is a context's setting: the page is loaded in the one a width needs."""

    def __init__(self, executable: str | None = None, timeout: float = 120.0):
        executable = executable or find()
        if executable is None:
            raise BrowserError("no Chromium found (chromium, chromium-browser, google-chrome)")
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as error:
            raise BrowserError(
                f"Chromium is here ({executable}) but Playwright is not: pip install -e '.[test]'"
            ) from error
        self.timeout_ms = timeout * 1000
        self.errors: list[str] = []
        self._url: str | None = None
        self._pages: dict[bool, Any] = {}  # mobile or not -> its page
        self._loaded: dict[bool, str] = {}  # mobile or not -> the URL its page holds
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=executable,
                args=["--disable-gpu", "--disable-quic"],
                chromium_sandbox=False,  # root in CI needs it
                timeout=self.timeout_ms,
            )
        except Exception:
            self._playwright.stop()
            raise
        self._page = self._page_for(DESKTOP)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def _page_for(self, width: int) -> Any:
        """The page of the context `width` needs, made on first use."""
        mobile = width < MOBILE_BELOW
        if mobile not in self._pages:
            context = self._browser.new_context(
                viewport={"width": width, "height": 900}, device_scale_factor=1, is_mobile=mobile
            )
            context.set_default_timeout(self.timeout_ms)
            page = context.new_page()
            page.on("console", self._console)
            page.on("pageerror", lambda error: self.errors.append(f"exception: {error}"))
            self._pages[mobile] = page
        return self._pages[mobile]

    def _console(self, message: Any) -> None:
        if message.type in ("error", "assert"):
            self.errors.append(f"console.{message.type}: {message.text}")

    # -- what a reader does ---------------------------------------------------------

    def open(self, page: Path, width: int = DESKTOP, height: int = 900) -> None:
        """Load `page` at `width` CSS pixels (a phone's under `MOBILE_BELOW`)."""
        self._url = Path(page).resolve().as_uri()
        self._loaded.clear()
        self.resize(width, height)

    def resize(self, width: int, height: int = 900) -> None:
        """Lay the page out again at `width` (no reload, unless a phone's width follows a
        desktop's or back: then the page loads in the other context)."""
        self._page = self._page_for(width)
        self._page.set_viewport_size({"width": width, "height": height})
        mobile = width < MOBILE_BELOW
        if self._url is not None and self._loaded.get(mobile) != self._url:
            self._page.goto(self._url, wait_until="load")
            self._page.evaluate("document.fonts.ready.then(() => true)")
            self._loaded[mobile] = self._url

    def evaluate(self, expression: str) -> Any:
        """The value of `expression` in the page shown last (a promise is awaited)."""
        return self._page.evaluate(expression)

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
        path = Path(path)
        clip = {"x": 0, "y": y, "width": width, "height": height}
        self._page.screenshot(path=path, clip=clip, full_page=True, type="png")
        return path

    def close(self) -> None:
        """Stop Chromium (Playwright removes its profile and temporary files) and the driver."""
        try:
            self._browser.close()
        finally:
            self._playwright.stop()
