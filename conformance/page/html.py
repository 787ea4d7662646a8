"""The report as one self-contained HTML page: CSS inline, pictures as base64 PNG, no script.

Nothing is fetched: the page opens from `file://` with no network. Every
row of a table carries `data-key` (the port, mutant or line it is about) and
the matrix rows an `id` of `matrix-<port>`, so a reader (or a browser test)
can find them.
"""

from __future__ import annotations

import base64
from html import escape

from .sections import Section
from .tables import Table

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1400px; padding: 0 1em; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
p.meta, p.caption { color: #555; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.4em 0 0.3em; font-size: 0.88em; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.good { background: #e6f4ea; }
td.bad { background: #fce8e6; font-weight: 600; }
td.warn { background: #fef7e0; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
nav a { margin-right: 1em; }
.scroll { overflow-x: auto; }
"""


def tone(cell: str) -> str:
    """A cell's class: good (✓), bad (✗), warn (inconclusive, `!`), or none."""
    if cell.startswith("✓"):
        return "good"
    if cell.startswith("✗") or " ✗" in cell:
        return "bad"
    if "inconclusive" in cell or cell.endswith("!"):
        return "warn"
    return ""


def table(found: Table) -> str:
    """One table, its title and caption; rows keyed by `data-key`."""
    head = "".join(f"<th>{escape(h)}</th>" for h in found.header)
    body = []
    for key, row in zip(found.keys, found.rows, strict=True):
        row_id = f' id="{escape(found.kind)}-{escape(key)}"' if found.kind == "matrix" else ""
        cells = "".join(
            f'<td class="{tone(c)}">{escape(c)}</td>' if tone(c) else f"<td>{escape(c)}</td>"
            for c in row
        )
        body.append(f'<tr data-key="{escape(key)}"{row_id}>{cells}</tr>')
    caption = f'<p class="caption">{escape(found.caption)}</p>' if found.caption else ""
    return (
        f"<h3>{escape(found.title)}</h3>\n"
        f'<div class="scroll"><table class="{escape(found.kind)}">'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody></table></div>"
        f"\n{caption}"
    )


def picture(title: str, png: bytes) -> str:
    """An inline PNG with its title as caption."""
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{escape(title)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{escape(title)}</figcaption></figure>"
    )


def page(title: str, meta: str, sections: list[Section]) -> str:
    """The whole page."""
    nav = " ".join(f'<a href="#{escape(s.anchor)}">{escape(s.title)}</a>' for s in sections)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{escape(meta)}</p>',
        f"<nav>{nav}</nav>",
    ]
    for section in sections:
        parts.append(f'<section id="{escape(section.anchor)}"><h2>{escape(section.title)}</h2>')
        parts += [f"<p>{escape(text)}</p>" for text in section.notes]
        parts += [table(t) for t in section.tables]
        parts += [picture(name, png) for name, png in section.pictures]
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
