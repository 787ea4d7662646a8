"""Any document as GitHub-flavoured Markdown (a CI job summary, `--markdown PATH`).

Every cell, title and paragraph comes from data (port names, messages, paths), so each is
escaped: `&`, `<`, `>` become entities (no HTML passes through a job summary: not a
`<script>`, not a `</details>` that would close the page's own), `|` cannot end a cell, and
a line break stays in its cell (`<br>`, the one tag written). A failed row's details follow
its table; a cell's bar (`fill`) is left out (its text says the figure).
"""

from __future__ import annotations

from ..model import Document, Figure, Items, Paragraph, Section, Table

ALIGN_RULES = {"left": "---", "right": "--:", "center": ":-:"}


def escape(text: str) -> str:
    """Plain text made safe for Markdown, a table cell included."""
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(raw, safe)
    return "<br>".join(text.splitlines())


def _cell(cell) -> str:
    text = escape(cell.text)
    if cell.tone == "strong" and text:
        text = f"**{text}**"
    if cell.note:
        text = f"{text}<br>{escape(cell.note)}" if text else escape(cell.note)
    return text


def table(found: Table, level: int = 3) -> list[str]:
    """One table: its title (a heading of `level`), the table, its caption."""
    lines = [f"{'#' * level} {escape(found.title)}", ""] if found.title else []
    width = len(found.columns)
    lines.append("| " + " | ".join(escape(c.name) for c in found.columns) + " |")
    lines.append("| " + " | ".join(ALIGN_RULES[c.align] for c in found.columns) + " |")
    for row in found.rows:
        if row.heading:  # its text in the first cell, the others empty
            lines.append(f"| {_cell(row.cells[0])} |" + " |" * (width - 1))
            continue
        lines.append("| " + " | ".join(_cell(c) for c in row.cells) + " |")
    if found.note:
        lines += ["", escape(found.note)]
    if found.caption:
        lines += ["", escape(found.caption)]
    lines.append("")
    for row in found.rows:  # a failed row's details follow (HTML shows every row's)
        if row.failed and row.details is not None:
            lines += table(row.details, level + 1)
    return lines


def items(found: Items) -> list[str]:
    """A titled list; an item indented by two spaces nests under the one before."""
    lines = [f"**{escape(found.title)}**", ""] if found.title else []
    for item in found.items:
        depth = (len(item) - len(item.lstrip(" "))) // 2
        lines.append("  " * depth + f"- {escape(item.strip())}")
    return [*lines, ""]


def paragraph(found: Paragraph) -> list[str]:
    text = escape(found.text)
    return [f"**{text}**" if found.mark in ("fail", "warn") else text, ""]


def figure(found: Figure) -> list[str]:
    """A picture linked by its path, its title as its alt text."""
    alt = escape(found.title).replace("[", "\\[").replace("]", "\\]")
    path = found.path.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    return [f"![{alt}]({path})", ""]


def section(found: Section, level: int = 2) -> list[str]:
    lines = [f"{'#' * level} {escape(found.title)}", ""] if found.title else []
    for block in found.blocks:
        if isinstance(block, Table):
            lines += table(block, level + 1)
        elif isinstance(block, Items):
            lines += items(block)
        elif isinstance(block, Figure):
            lines += figure(block)
        else:
            lines += paragraph(block)
    return lines


def document(found: Document, level: int = 1) -> str:
    """The whole document: its title at `level`, each section one level below."""
    lines = [f"{'#' * level} {escape(found.title)}", ""] if found.title else []
    for part in found.sections:
        lines += section(part, level + 1)
    return "\n".join(lines).rstrip("\n") + "\n"
