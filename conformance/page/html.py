"""The report as one self-contained HTML page: CSS inline, pictures as base64 PNG, no script.

Nothing is fetched: the page opens from `file://` with no network. Every
row of a table carries `data-key` (the port, mutant or line it is about); a
grid's rows carry the id `<kind>-<port>` (`matrix-pytorch`, `policies-pytorch`),
so a reader (or a browser test) can find them. The grids are compact (a mark
and a bar per cell); each row's details are a `<details>` element below the
grid, opened where the row failed, and each cell links to its line there.
The body never scrolls sideways: every table sits in a box of its own that
scrolls, long words wrap, pictures shrink to the width.
"""

from __future__ import annotations

import base64
from html import escape

from ..tables.model import Table
from ..tables.render import html as html_render
from .grids import Cell, Grid, GridRow, slug
from .sections import Section
from .tables import marked

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
table.grid th.port { position: sticky; left: 0; background: #fff;
      z-index: 1; white-space: nowrap; }
table.grid thead th.port { background: #f1f1f1; z-index: 2; }
table.grid tbody th.port { font-weight: normal; }
table.grid th.col { text-align: center; white-space: nowrap; }
table.grid td.cell { text-align: center; padding: 2px 3px; min-width: 2.4em; }
table.grid td.cell a { display: block; color: inherit; text-decoration: none; }
table.grid .mark { font-weight: 700; display: block; line-height: 1.2; }
table.grid .short { display: block; font-size: 0.82em; color: #333; white-space: nowrap; }
.bar { display: block; height: 4px; background: #d9d9d9; margin: 2px auto 0; width: 2em; }
.bar > i { display: block; height: 100%; background: #1e7a3c; }
table.grid td.good { background: #eef7f0; }
table.grid td.warn { background: #fff3c4; outline: 2px dashed #8a6d00; outline-offset: -3px; }
table.grid td.muted { background: #f6f6f6; color: #666; }
table.grid td.bad { background: #b3261e; color: #fff; outline: 3px solid #000;
                    outline-offset: -3px; }
table.grid td.bad .short { color: #fff; }
table.grid td.bad .bar { background: #fff; }
table.grid td.bad .bar > i { background: #000; }
table.grid tr.failed th.port { font-weight: 700; }
table.grid tr.failed th.port::before { content: "✗ "; }
.legend span.key { display: inline-block; border: 1px solid #bbb; padding: 0 0.4em;
                   margin-right: 0.2em; font-weight: 700; }
.legend span.bad { background: #b3261e; color: #fff; }
.legend span.good { background: #eef7f0; }
.legend span.warn { background: #fff3c4; }
.legend span.muted { background: #f6f6f6; }
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
  table.grid { font-size: 0.76em; }
  table.grid td.cell { min-width: 1.7em; padding: 1px; }
  table.grid th.col, table.grid th.port { padding: 2px; }
  .bar { width: 1.4em; }
  h1 { font-size: 1.35em; }
}
"""


def heading_id(kind: str, title: str) -> str:
    return f"t-{slug(kind or 'table')}-{abs(hash(title)) % 10**8}"


def table(found: Table, anchor: str) -> str:
    """One table, its title and caption (`conformance.tables.render.html`)."""
    return html_render.table(found, anchor)


def _cell(cell: Cell, show_short: bool) -> str:
    bar = ""
    if cell.fill is not None:
        width = f"{cell.fill * 100:.0f}%"
        bar = f'<span class="bar" aria-hidden="true"><i style="width:{width}"></i></span>'
    short = f'<span class="short">{escape(cell.short)}</span>' if show_short and cell.short else ""
    inner = (
        f'<span class="mark" aria-hidden="true">{escape(cell.mark)}</span>{short}{bar}'
        f'<span class="sr">{escape(cell.words)}</span>'
    )
    if cell.anchor:
        inner = f'<a href="#{escape(cell.anchor)}">{inner}</a>'
    tone_class = f" {cell.tone}" if cell.tone else ""
    return f'<td class="cell{tone_class}" title="{escape(cell.words)}">{inner}</td>'


def _details(grid: Grid, row: GridRow) -> str:
    if not row.details:
        return ""
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in row.detail_header)
    lines = []
    for anchor, line in zip(row.detail_anchors, row.details, strict=True):
        cells = []
        for index, text in enumerate(line):
            if index in row.code_columns and text:
                cells.append(f"<td><code>{escape(text)}</code></td>")
            elif index == 1:
                tone = marked(text).tone
                cells.append(f'<td class="{tone}">{escape(text)}</td>')
            elif len(text) > 120:
                cells.append(f'<td class="message">{escape(text)}</td>')
            else:
                cells.append(f"<td>{escape(text)}</td>")
        lines.append(f'<tr id="{escape(anchor)}">{"".join(cells)}</tr>')
    failed = " failed" if row.failed else ""
    opened = " open" if row.failed else ""
    return (
        f'<details class="row{failed}" id="{escape(grid.kind)}-details-{escape(slug(row.key))}"'
        f"{opened}><summary>{escape(row.summary or row.key)}</summary>"
        f'<div class="scroll"><table class="details"><thead><tr>{head}</tr></thead><tbody>'
        + "".join(lines)
        + "</tbody></table></div></details>"
    )


def grid(found: Grid, anchor: str) -> str:
    """A compact grid, its legend and caption, then its rows' details."""
    show_short = found.kind != "matrix"
    head = "".join(f'<th scope="col" class="port">{escape(h)}</th>' for h in found.lead_header)
    titles = found.column_titles or found.columns
    head += "".join(
        f'<th scope="col" class="col" title="{escape(t)}"><abbr title="{escape(t)}">'
        f"{escape(c)}</abbr></th>"
        for c, t in zip(found.columns, titles, strict=True)
    )
    head += "".join(f'<th scope="col">{escape(h)}</th>' for h in found.trail_header)
    body = []
    for row in found.rows:
        lead = "".join(
            f'<th scope="row" class="port">{escape(text)}</th>'
            if i == 0
            else f"<td>{escape(text)}</td>"
            for i, text in enumerate(row.lead)
        )
        cells = "".join(_cell(c, show_short) for c in row.cells)
        trail = "".join(f"<td>{escape(text)}</td>" for text in row.trail)
        failed = ' class="failed"' if row.failed else ""
        body.append(
            f'<tr id="{escape(found.kind)}-{escape(row.key)}" data-key="{escape(row.key)}"'
            f"{failed}>{lead}{cells}{trail}</tr>"
        )
    legend = " ".join(
        f'<span class="key {escape(t)}">{escape(mark)}</span>{escape(meaning)}'
        for mark, t, meaning in found.legend
    )
    failing = [row.key for row in found.rows if row.failed]
    summary = (
        f"{len(failing)} of {len(found.rows)} rows have a ✗: {', '.join(failing)}."
        if failing
        else f"No ✗ in {len(found.rows)} rows."
    )
    column_key = ""
    if found.column_titles and found.column_titles != found.columns:
        column_key = (
            '<details class="columns"><summary>Columns</summary><ul>'
            + "".join(f"<li>{escape(t)}</li>" for t in found.column_titles)
            + "</ul></details>"
        )
    details = "".join(_details(found, row) for row in found.rows if row.failed)
    passing = [row for row in found.rows if not row.failed and row.details]
    if passing:
        details += (
            f'<details class="passing"><summary>Details of the {len(passing)} rows without '
            f"a ✗</summary>" + "".join(_details(found, row) for row in passing) + "</details>"
        )
    return (
        f'<h3 id="{escape(anchor)}">{escape(found.title)}</h3>\n'
        f'<p class="legend"><strong>{escape(summary)}</strong> {legend}</p>\n'
        f'<div class="scroll"><table class="grid {escape(found.kind)}">'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody></table></div>"
        f'\n<p class="caption">{escape(found.caption)}</p>{column_key}\n'
        f'<h4 class="sr">Details by row</h4><div class="details">{details}</div>'
    )


def picture(title: str, png: bytes, alt: str = "") -> str:
    """An inline PNG: its alt text (what it shows), its title as caption."""
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{escape(alt or title)}" src="data:image/png;base64,{data}">'
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
        (f"{section.anchor}-g{i}", g.title.split(":", 1)[0].split(" · ", 1)[0])
        for i, g in enumerate(section.grids)
    ]
    found += [
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
        parts += [f"<p>{escape(text)}</p>" for text in section.notes]
        parts += [grid(g, f"{section.anchor}-g{i}") for i, g in enumerate(section.grids)]
        parts += [table(t, f"{section.anchor}-t{i}") for i, t in enumerate(section.tables)]
        if section.pictures:
            parts.append(f'<h3 id="{escape(section.anchor)}-pictures">Pictures</h3>')
        parts += [picture(p.title, p.png, p.alt) for p in section.pictures]
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"
