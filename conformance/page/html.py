"""The report as one self-contained HTML page: CSS inline, pictures as base64 PNG, no script.

Nothing is fetched: the page opens from `file://` with no network. Its tables
are the model's (`conformance.tables.render.html` draws them, the same tables the
terminal prints): every row carries `data-key` (the port, mutant or line it is
about) and the id `<kind>-<port>` (`matrix-pytorch`, `policies-pytorch`), so a
reader (or a browser test) can find them; a row's details are a `<details>`
element below its table, opened where the row failed. The body never scrolls
sideways: every table sits in a box of its own that scrolls, long words wrap,
pictures shrink to the width; on a phone a row's details stack, one line per
field, so that a failure's message and replay command need no sideways scroll. The compact
grids (`GRIDS`: the summary, the property, policy and composition grids) keep their columns
on a phone, their notes hidden (the details hold them); every other table stacks its rows
there, each field under its column's name (`table.stack`).
"""

from __future__ import annotations

import base64
from html import escape

from ..tables.model import Items, Paragraph, Table
from ..tables.render import html as html_render
from .sections import Section

CSS = """
*, *::before, *::after { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto;
       max-width: 1400px; padding: 0 1em; color: #1b1b1b; background: #fff;
       overflow-wrap: anywhere; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; border-bottom: 1px solid #bbb; padding-bottom: 0.2em; margin-top: 2em; }
h3 { font-size: 1.08em; margin: 1.4em 0 0.4em; }
p.meta, p.caption, p.legend { color: #444; font-size: 0.9em; }
a { color: #0b57a4; }
table { border-collapse: collapse; margin: 0.4em 0 0.3em; font-size: 0.88em;
        overflow-wrap: normal; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f1f1f1; position: sticky; top: 0; }
td.good { background: #e6f4ea; }
td.bad { background: #fce8e6; font-weight: 600; }
td.warn { background: #fef7e0; }
.scroll { overflow-x: auto; max-width: 100%; position: relative; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #444; font-size: 0.9em; }
nav.toc { background: #f7f7f7; border: 1px solid #ddd; padding: 0.4em 1em; }
nav.toc ol { margin: 0.2em 0; padding-left: 1.4em; }
nav.toc li { margin: 0.1em 0; }
code { font: 0.9em ui-monospace, "SFMono-Regular", Menlo, monospace; }
td code { white-space: pre-wrap; overflow-wrap: anywhere; }
td.message { white-space: pre-wrap; max-width: 48em; overflow-wrap: anywhere; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden;
      clip: rect(0 0 0 0); white-space: nowrap; }
td.muted { background: #f6f6f6; color: #555; }
td small { color: #444; }
GRID td, GRID th { white-space: nowrap; }
GRID td { text-align: center; }
GRID td:first-child { text-align: left; position: sticky; left: 0; background: #fff;
      z-index: 1; }
GRID td:first-child small { white-space: normal; }
GRID td.bad { background: #b3261e; color: #fff; outline: 3px solid #000;
                      outline-offset: -3px; }
GRID td.bad small { color: #fff; }
GRID tr.failed td:first-child { font-weight: 700; }
GRID tr.failed td:first-child::before { content: "✗ "; color: #b3261e; }
GRID a { color: inherit; text-decoration: none; display: block; }
.bar { display: block; height: 4px; background: #d9d9d9; margin: 2px auto 0; width: 2em; }
.bar > i { display: block; height: 100%; background: #1e7a3c; }
p.note { margin: 0.3em 0; }
/* A long unbroken cell (a call, a path) wraps rather than widening its table past the page. */
table.stack td { overflow-wrap: anywhere; }
span.fig { white-space: nowrap; }
p.headline.good { color: #1e5e2f; }
p.headline.bad { color: #8c1d18; }
table.details td:nth-child(n+2):nth-child(-n+5) { white-space: nowrap; }
details.row { margin: 0.2em 0; border: 1px solid #ddd; padding: 0.2em 0.6em; }
details.row[open] { background: #fcfcfc; }
details.row.failed > summary { font-weight: 700; color: #8c1d18; }
details.row > summary, details.passing > summary, details.columns > summary {
  cursor: pointer; }
details.passing, details.table { margin: 0.4em 0; }
details.table > summary { cursor: pointer; }
details.passing > summary { font-weight: 600; }
tr:target td { outline: 3px solid #0b57a4; outline-offset: -3px; }
@media (min-width: 900px) {
  nav.toc > ol { columns: 3; column-gap: 2em; }
  nav.toc > ol > li { break-inside: avoid; }
}
@media (max-width: 600px) {
  body { font-size: 14px; padding: 0 0.5em; margin: 0.8em auto; }
  th, td { padding: 2px 4px; }
  /* Twelve properties, the port and their marks fit 390 px (the quick start's page: 376). */
  GRID { font-size: 0.68em; }
  GRID td, GRID th { padding: 1px 1px; }
  /* The worst error/bound is the bar (and its figure is in the row's details). */
  GRID td:not(:first-child) small { display: none; }
  GRID td:first-child { max-width: 8.5em; white-space: normal; }
  GRID th { white-space: normal; }
  /* The wall time is in each row's details' heading. */
  table.matrix th:last-child, table.matrix td:last-child { display: none; }
  /* Every other table's rows stack, one field a line, its column's name before it. */
  table.stack, table.stack tbody, table.stack tr, table.stack td, table.stack tr > th {
    display: block; width: auto; }
  table.stack thead { display: none; }
  table.stack tr { border-top: 2px solid #999; margin-top: 0.4em; }
  table.stack td { border: none; border-bottom: 1px solid #eee; white-space: normal; }
  table.stack td[data-label]::before { content: attr(data-label) ": "; font-weight: 600;
    color: #444; }
  table.stack td:empty { display: none; }
  .bar { width: 1.4em; }
  h1 { font-size: 1.35em; }
  /* A row's details stack, one field a line, its heading before it: no sideways scroll. */
  table.details, table.details tbody, table.details tr, table.details td {
    display: block; width: auto; }
  table.details thead { display: none; }
  table.details tr { border-top: 2px solid #999; margin-top: 0.4em; }
  table.details td { border: none; border-bottom: 1px solid #eee; white-space: normal; }
  table.details td::before { content: attr(data-label) ": "; font-weight: 600; color: #444; }
  table.details td:nth-child(n+2):nth-child(-n+5) { white-space: normal; }
  table.details td:empty { display: none; }
  .picture img { max-width: 240vw; width: auto; }
  figure .picture::after { content: "← pan the picture sideways →"; display: block;
                           color: #666; font-size: 0.85em; }
}
"""


#: The tables drawn as compact grids (a short cell per column, narrow enough for a phone);
#: every other table stacks its rows on a phone (`table.stack`).
GRIDS = ("matrix", "summary", "policies", "compositions")
CSS = CSS.replace("GRID", ":is(" + ", ".join(f"table.{kind}" for kind in GRIDS) + ")")


def table(found: Table, anchor: str) -> str:
    """One table, its title and caption (`conformance.tables.render.html`)."""
    return html_render.table(found, anchor, stack=found.kind not in GRIDS)


def paragraph(found: Paragraph) -> str:
    """A paragraph; a headline (a pass or fail mark) in bold, in its tone."""
    tone = {"pass": "good", "fail": "bad"}.get(found.mark, "")
    if tone:
        return f'<p class="headline {tone}"><strong>{escape(found.text)}</strong></p>'
    return f"<p>{escape(found.text)}</p>"


def items(found: Items) -> str:
    """A titled list, one item a line."""
    lines = "".join(f"<li>{escape(item.strip())}</li>" for item in found.items)
    return f'<p class="note"><strong>{escape(found.title)}</strong></p><ul>{lines}</ul>'


def picture(title: str, png: bytes, alt: str = "") -> str:
    """An inline PNG: its alt text (what it shows), its title as caption. On a phone it keeps
    a readable size (its own, up to 2.4 times the screen) in a box that pans sideways."""
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><div class="scroll picture"><img alt="{escape(alt or title)}" '
        f'src="data:image/png;base64,{data}"></div>'
        f"<figcaption>{escape(title)}</figcaption></figure>"
    )


def _contents(sections: list[Section]) -> str:
    items = []
    for section in sections:
        inner = "".join(
            f'<li><a href="#{escape(anchor)}">{escape(title)}</a></li>'
            for anchor, title in _parts(section)
        )
        items.append(
            f'<li><a href="#{escape(section.anchor)}">{escape(section.title)}</a>'
            + (f"<ol>{inner}</ol>" if inner else "")
            + "</li>"
        )
    return (
        '<nav class="toc" aria-label="Contents"><strong>Contents</strong>'
        f"<ol>{''.join(items)}</ol></nav>"
    )


def _parts(section: Section) -> list[tuple[str, str]]:
    found = [
        (f"{section.anchor}-t{i}", t.title.split(" · ", 1)[0]) for i, t in enumerate(section.tables)
    ]
    if section.pictures:
        found.append((f"{section.anchor}-pictures", "Pictures"))
    return found


def page(title: str, meta: str, sections: list[Section]) -> str:
    """The whole page."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<header><h1>{escape(title)}</h1>",
        f'<p class="meta">{escape(meta)}</p></header>',
        _contents(sections),
        "<main>",
    ]
    for section in sections:
        parts.append(f'<section id="{escape(section.anchor)}"><h2>{escape(section.title)}</h2>')
        number = 0
        for block in section.blocks:
            if isinstance(block, Table):
                parts.append(table(block, f"{section.anchor}-t{number}"))
                number += 1
            elif isinstance(block, Paragraph):
                parts.append(paragraph(block))
            elif isinstance(block, Items):
                parts.append(items(block))
        if section.pictures:
            parts.append(f'<h3 id="{escape(section.anchor)}-pictures">Pictures</h3>')
        parts += [picture(p.title, p.png, p.alt) for p in section.pictures]
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"
