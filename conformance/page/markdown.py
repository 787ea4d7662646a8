"""The report as Markdown, for CI summaries (`$GITHUB_STEP_SUMMARY`): the same sections.

Pictures cannot be inlined there (GitHub drops data URLs), so each is
written next to the Markdown file and linked by a relative path; with no
directory to write into, the picture is named and left out.
"""

from __future__ import annotations

from pathlib import Path

from ..tables.render import markdown as markdown_render
from .grids import Grid, as_table, details_table
from .sections import Section


def grid(found: Grid) -> list[str]:
    """A grid as a table of marks, then the details of the rows that have a ✗."""
    lines = markdown_render.table(as_table(found))
    for row in found.rows:
        if row.failed and row.details:
            lines += markdown_render.table(details_table(row), level=4)
    return lines


def document(
    title: str, meta: str, sections: list[Section], pictures_dir: Path | None = None
) -> str:
    """The whole report. `pictures_dir`: where to write the PNGs (linked relative to it)."""
    lines = [f"# {markdown_render.escape(title)}", "", markdown_render.escape(meta), ""]
    number = 0
    for section in sections:
        lines += [f"## {markdown_render.escape(section.title)}", ""]
        for note in section.notes:
            lines += [markdown_render.escape(note), ""]
        for found_grid in section.grids:
            lines += grid(found_grid)
        for found in section.tables:
            lines += markdown_render.table(found)
        for picture_title, png, _alt in section.pictures:
            number += 1
            if pictures_dir is None:
                said = markdown_render.escape(picture_title)
                lines += [f"Picture left out (no directory to write it to): {said}", ""]
                continue
            pictures_dir.mkdir(parents=True, exist_ok=True)
            name = f"report-{number}.png"
            (pictures_dir / name).write_bytes(png)
            alt = markdown_render.escape(picture_title).replace("]", "\\]")
            lines += [f"![{alt}]({pictures_dir.name}/{name})", ""]
    return "\n".join(lines)
