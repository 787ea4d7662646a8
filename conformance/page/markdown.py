"""The report as Markdown, for CI summaries (`$GITHUB_STEP_SUMMARY`): the same sections.

Pictures cannot be inlined there (GitHub drops data URLs), so each is
written next to the Markdown file and linked by a relative path; with no
directory to write into, the picture is named and left out.
"""

from __future__ import annotations

from pathlib import Path

from .grids import Grid
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


def grid(found: Grid) -> list[str]:
    """A grid as a table of marks (with the worst error/bound or the policy's figures), then
    the details of the rows that have a ✗."""
    lines = [f"### {found.title}", ""]
    header = [*found.lead_header, *found.columns, *found.trail_header]
    lines.append("| " + " | ".join(_cell(h) for h in header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in found.rows:
        cells = [f"{c.mark} {c.short}".strip() for c in row.cells]
        lines.append("| " + " | ".join(_cell(c) for c in [*row.lead, *cells, *row.trail]) + " |")
    legend = " · ".join(f"{mark} {meaning}" for mark, _, meaning in found.legend)
    lines += ["", f"_{_cell(legend)}. {_cell(found.caption)}_", ""]
    for row in found.rows:
        if not row.failed or not row.details:
            continue
        lines += [f"#### {row.summary or row.key}", ""]
        lines.append("| " + " | ".join(_cell(h) for h in row.detail_header) + " |")
        lines.append("|" + "---|" * len(row.detail_header))
        lines += ["| " + " | ".join(_cell(c) for c in line) + " |" for line in row.details]
        lines.append("")
    return lines


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
        for found_grid in section.grids:
            lines += grid(found_grid)
        for found in section.tables:
            lines += table(found)
        for picture_title, png, _alt in section.pictures:
            number += 1
            if pictures_dir is None:
                lines += [f"_Picture left out (no directory to write it to): {picture_title}_", ""]
                continue
            pictures_dir.mkdir(parents=True, exist_ok=True)
            name = f"report-{number}.png"
            (pictures_dir / name).write_bytes(png)
            lines += [f"![{picture_title}]({pictures_dir.name}/{name})", ""]
    return "\n".join(lines)
