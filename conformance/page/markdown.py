"""The report as Markdown, for CI summaries (`$GITHUB_STEP_SUMMARY`): the same sections.

Pictures cannot be inlined there (GitHub drops data URLs), so each is
written next to the Markdown file and linked by a relative path; with no
directory to write into, the picture is named and left out.
"""

from __future__ import annotations

from pathlib import Path

from .sections import Section
from .tables import Table


def _cell(text: str) -> str:
    # A pipe would end the cell; a newline the row.
    return text.replace("|", "\\|").replace("\n", " ")


def table(found: Table) -> list[str]:
    lines = [f"### {found.title}", ""]
    lines.append("| " + " | ".join(_cell(h) for h in found.header) + " |")
    lines.append("|" + "---|" * len(found.header))
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in found.rows]
    if found.caption:
        lines += ["", f"_{_cell(found.caption)}_"]
    return [*lines, ""]


def document(
    title: str, meta: str, sections: list[Section], pictures_dir: Path | None = None
) -> str:
    """The whole report. `pictures_dir`: where to write the PNGs (linked relative to it)."""
    lines = [f"# {title}", "", meta, ""]
    number = 0
    for section in sections:
        lines += [f"## {section.title}", ""]
        for note in section.notes:
            lines += [note, ""]
        for found in section.tables:
            lines += table(found)
        for picture_title, png in section.pictures:
            number += 1
            if pictures_dir is None:
                lines += [f"_Picture left out (no directory to write it to): {picture_title}_", ""]
                continue
            pictures_dir.mkdir(parents=True, exist_ok=True)
            name = f"report-{number}.png"
            (pictures_dir / name).write_bytes(png)
            lines += [f"![{picture_title}]({pictures_dir.name}/{name})", ""]
    return "\n".join(lines)
