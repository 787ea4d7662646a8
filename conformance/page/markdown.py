"""The report as Markdown, for CI summaries (`$GITHUB_STEP_SUMMARY`): the same sections.

Pictures cannot be inlined there (GitHub drops data URLs), so each is
written next to the Markdown file and linked by a relative path; with no
directory to write into, the picture is named and left out.
"""

from __future__ import annotations

from pathlib import Path

from .. import outputs
from ..tables.model import Block, Document, Figure, Paragraph
from ..tables.model import Section as Part
from ..tables.render import markdown as markdown_render
from .sections import Section


def document(
    title: str, meta: str, sections: list[Section], pictures_dir: Path | None = None
) -> str:
    """The whole report. `pictures_dir`: where to write the PNGs (linked relative to it)."""
    parts = [Part("", (Paragraph(meta),))]
    number = 0
    for section in sections:
        blocks: list[Block] = list(section.blocks)
        for picture_title, png, _alt in section.pictures:
            number += 1
            if pictures_dir is None:
                said = f"Picture left out (no directory to write it to): {picture_title}"
                blocks.append(Paragraph(said))
                continue
            pictures_dir.mkdir(parents=True, exist_ok=True)
            name = f"report-{number}.png"
            outputs.write_bytes(pictures_dir / name, png)
            blocks.append(Figure(picture_title, f"{pictures_dir.name}/{name}"))
        parts.append(Part(section.title, tuple(blocks)))
    return markdown_render.document(Document("report", title, tuple(parts)))
