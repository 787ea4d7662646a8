"""One table as HTML, for the report page (`conformance.page.html` places it).

Every row carries `data-key` (its port, mutant or line), and a table of a `kind` gives its
rows the id `<kind>-<key>` (`matrix-pytorch`); a cell's tone is its class (`good`, `bad`,
`warn`, `muted`), never its only signal (its text says the same); every string is escaped.
A cell's `fill` is a bar under its text. A row's details follow the table, each in a
`<details>` element (open where the row failed; the others one click away, together), and
a cell with details links to its line there. A collapsed table is one click away, and each
table sits in a box of its own that scrolls.
"""

from __future__ import annotations

import re
from html import escape

from ..model import Cell, Row, Table


def slug(text: str) -> str:
    """`text` as an id fragment: letters, digits, `-` and `_`."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)


#: A figure a browser could break at its `-` ("4.5e-" / "03"): a token with a digit and a dash.
FIGURE = re.compile(r"(?<!\S)(?=\S*\d)(?=\S*-)\S{1,24}(?!\S)")


def _text(text: str) -> str:
    """Escaped text, line breaks kept, each figure whole (`FIGURE`: never split mid-token)."""
    lines = []
    for line in text.split("\n"):
        parts, end = [], 0
        for match in FIGURE.finditer(line):
            parts += [
                escape(line[end : match.start()]),
                f'<span class="fig">{escape(match[0])}</span>',
            ]
            end = match.end()
        lines.append("".join(parts) + escape(line[end:]))
    return "<br>".join(lines)


def cell(found: Cell, tag: str = "td", code: bool = False, label: str = "") -> str:
    """A cell; `code`: its text as code (a command); `label`: its column's name, which a
    phone shows before it where a row's fields stack."""
    inner = _text(found.text)
    if code and found.text:
        inner = f"<code>{escape(found.text)}</code>"
    if found.note:
        inner += f"<br><small>{_text(found.note)}</small>"
    if found.fill is not None:
        width = f"{found.fill * 100:.0f}%"
        inner += f'<span class="bar" aria-hidden="true"><i style="width:{width}"></i></span>'
    if found.link:
        inner = f'<a href="{escape(found.link)}">{inner}</a>'
    classes = [found.tone] if found.tone and found.tone != "strong" else []
    if len(found.text) > 120:
        classes.append("message")
    attributes = f' class="{" ".join(classes)}"' if classes else ""
    if found.title:
        attributes += f' title="{escape(found.title)}"'
    if label:
        attributes += f' data-label="{escape(label)}"'
    return f"<{tag}{attributes}>{inner}</{tag}>"


def _linked(row: Row, index: int, found: Cell) -> Cell:
    """A cell that links to its line in the row's details (the details' lines are the
    row's cells after its first, in order, each keyed by its anchor)."""
    if row.details is None or index == 0 or index > len(row.details.rows) or found.link:
        return found
    line = row.details.rows[index - 1]
    return Cell(found.text, found.mark, found.note, f"#{line.key}", found.title, found.fill)


def details(found: Table, row: Row) -> str:
    """A row's details: its table (each line's id its key), in a `<details>` element whose
    summary is the table's title; open when the row failed."""
    inner = row.details
    head = "".join(f'<th scope="col">{escape(c.name)}</th>' for c in inner.columns)
    code = {i for i, c in enumerate(inner.columns) if c.name == "replay"}
    lines = [
        f'<tr id="{escape(slug(line.key))}">'
        + "".join(
            cell(c, code=i in code, label=inner.columns[i].name) for i, c in enumerate(line.cells)
        )
        + "</tr>"
        for line in inner.rows
    ]
    failed = " failed" if row.failed else ""
    opened = " open" if row.failed else ""
    return (
        f'<details class="row{failed}" id="{escape(found.kind)}-details-{escape(slug(row.key))}"'
        f"{opened}><summary>{escape(inner.title)}</summary>"
        f'<div class="scroll"><table class="details"><thead><tr>{head}</tr></thead><tbody>'
        + "".join(lines)
        + "</tbody></table></div></details>"
    )


def all_details(found: Table) -> str:
    """The rows' details: a failed row's open, the others together, one click away."""
    rows = [row for row in found.rows if row.details is not None]
    if not rows:
        return ""
    shown = "".join(details(found, row) for row in rows if row.failed)
    passing = [row for row in rows if not row.failed]
    if passing:
        shown += (
            f'<details class="passing"><summary>Details of the {len(passing)} rows without '
            f"a ✗</summary>" + "".join(details(found, row) for row in passing) + "</details>"
        )
    return f'<div class="details">{shown}</div>'


def _heading(name: str) -> str:
    """A column's heading; it may break after an underscore (`offload_dots`), no elsewhere."""
    return escape(name).replace("_", "_<wbr>")


def table(found: Table, anchor: str, stack: bool = False) -> str:
    """The table, its title (an `<h3>` with the id `anchor`) and its caption. `stack`: the
    class `stack` and each cell its column's name (`data-label`), for a narrow screen that
    stacks the rows' fields."""
    head = "".join(f'<th scope="col">{_heading(c.name)}</th>' for c in found.columns)
    labels = [c.name if stack else "" for c in found.columns]
    body = []
    for row in found.rows:
        key = f' data-key="{escape(row.key)}"' if row.key else ""
        if row.heading:
            text = escape(row.cells[0].text)
            span = len(found.columns)
            ident = f' id="{escape(found.kind)}-{escape(slug(row.key))}"' if found.kind else ""
            body.append(f'<tr{key}{ident}><th scope="colgroup" colspan="{span}">{text}</th></tr>')
            continue
        ident = f' id="{escape(found.kind)}-{escape(slug(row.key))}"' if found.kind else ""
        failed = ' class="failed"' if row.failed else ""
        cells = "".join(cell(_linked(row, i, c), label=labels[i]) for i, c in enumerate(row.cells))
        body.append(f"<tr{key}{ident}{failed}>{cells}</tr>")
    classes = " ".join(c for c in (found.kind, "stack" if stack else "") if c)
    caption = f'<p class="caption">{escape(found.caption)}</p>' if found.caption else ""
    if found.note:
        caption = f'<p class="note">{escape(found.note)}</p>{caption}'
    shown = (
        f'<div class="scroll"><table class="{escape(classes)}">'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody></table></div>"
        f"\n{caption}{all_details(found)}"
    )
    if found.collapsed:  # nothing in it stands out: one click away
        shown = (
            f'<details class="table"><summary>Show the {len(found.keys)} rows</summary>'
            f"{shown}</details>"
        )
    return f'<h3 id="{escape(anchor)}">{escape(found.title)}</h3>\n{shown}'
