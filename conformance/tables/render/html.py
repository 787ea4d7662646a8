"""One table as HTML, for the report page (`conformance.page.html` places it).

Every row carries `data-key` (its port, mutant or line); a cell's tone is its class
(`good`, `bad`, `warn`, `muted`), never its only signal (its text says the same); every
string is escaped. A collapsed table is one click away (`<details>`), and each table sits
in a box of its own that scrolls.
"""

from __future__ import annotations

from html import escape

from ..model import Cell, Table


def cell(found: Cell, tag: str = "td") -> str:
    inner = escape(found.text).replace("\n", "<br>")
    if found.note:
        inner += f"<br><small>{escape(found.note).replace(chr(10), '<br>')}</small>"
    if found.link:
        inner = f'<a href="{escape(found.link)}">{inner}</a>'
    attributes = f' class="{found.tone}"' if found.tone and found.tone != "strong" else ""
    if found.title:
        attributes += f' title="{escape(found.title)}"'
    return f"<{tag}{attributes}>{inner}</{tag}>"


def table(found: Table, anchor: str) -> str:
    """The table, its title (an `<h3>` with the id `anchor`) and its caption."""
    head = "".join(f'<th scope="col">{escape(c.name)}</th>' for c in found.columns)
    body = []
    for row in found.rows:
        key = f' data-key="{escape(row.key)}"' if row.key else ""
        if row.heading:
            text = escape(row.cells[0].text)
            span = len(found.columns)
            body.append(f'<tr{key}><th scope="colgroup" colspan="{span}">{text}</th></tr>')
            continue
        body.append(f"<tr{key}>{''.join(cell(c) for c in row.cells)}</tr>")
    caption = f'<p class="caption">{escape(found.caption)}</p>' if found.caption else ""
    shown = (
        f'<div class="scroll"><table class="{escape(found.kind)}">'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody></table></div>"
        f"\n{caption}"
    )
    if found.collapsed:  # nothing in it stands out: one click away
        shown = (
            f'<details class="table"><summary>Show the {len(found.keys)} rows</summary>'
            f"{shown}</details>"
        )
    return f'<h3 id="{escape(anchor)}">{escape(found.title)}</h3>\n{shown}'
