"""`python -m conformance report`: one self-contained HTML page (and Markdown) from JSON reports.

`build(...)` is the entry point, for the CLI and for `conformance.page`:
it reads every kind of report the project writes (`run --json`, `compare --json`,
`bench.json`, `bench-policies.json`, `bench-schedules.json`, `scale.json`, a version
sweep's JSON) (the command can make them first), and returns a
`Report` holding the HTML and the Markdown, written to files when asked.

- `documents`: a report as read (`conformance.tables.reports`, the one reader) and its kind;
- `kinds`: what each kind of report shows, one entry per kind (`KINDS`): its section's title,
  its blocks (its tables, built in `conformance.tables.kinds`, as every table is: the same the
  terminal draws, each row's details in it; the page's own grids too, `glance` and
  `compare_grids`) and its pictures;
- `sections`: what the report shows, in order: at a glance, a section per report as its kind
  declares it, the runs' version sets, the machines;
- `facts`: compare's verdict in words and its matmul counts, for the CSV and the pictures;
- `pictures`: the compare, bench, policy-bench and scale pictures (the schedules' is
  `conformance.benchmark.schedule_plot`'s), PNG bytes, in each
  engine's colour and marker (`conformance.colours`);
- `html`, `markdown`: the two renderings (their tables drawn by `conformance.tables.render`).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import outputs
from . import html, markdown
from .documents import Document, DocumentError, from_data, read
from .sections import Section, sections

__all__ = ["Document", "DocumentError", "Report", "build"]

TITLE = "remat-conformance report"


@dataclass
class Report:
    """A built report: the documents it was made of, its HTML page and its Markdown.

    `html_path` and `markdown_path` are where they were written (None: not written).
    """

    # Left out of the repr: a page with its pictures is hundreds of kilobytes.
    documents: list[Document] = field(repr=False)
    html: str = field(repr=False)
    markdown: str = field(repr=False)
    sections: list[Section] = field(default_factory=list, repr=False)
    html_path: Path | None = None
    markdown_path: Path | None = None

    @property
    def kinds(self) -> list[str]:
        """The kind of each report it holds, in order: `run`, `compare`, `bench`."""
        return [d.kind for d in self.documents]

    def to_json(self) -> dict[str, Any]:
        """The reports it holds, by kind, as they were read (the same data as their JSON)."""
        return {
            "documents": [
                {"kind": d.kind, "source": d.source, "data": d.data} for d in self.documents
            ],
            "html_path": None if self.html_path is None else str(self.html_path),
            "markdown_path": None if self.markdown_path is None else str(self.markdown_path),
        }


def build(
    reports: Sequence[str | Path | dict[str, Any]] = (),
    *,
    html_path: str | Path | None = None,
    markdown_path: str | Path | None = None,
    pictures: bool = True,
    title: str = TITLE,
    versions: Sequence[dict[str, Any]] | None = None,
) -> Report:
    """Build the report from JSON reports: paths, or already parsed documents.

    **Arguments:**

    - `reports`: `run --json`, `compare --json` and `bench.json` reports, as
      file paths or parsed `dict`s (an object with `to_json()`, such as a
      `Comparison` or a `BenchReport`, is taken too, and a `Document`), in the
      order shown.
    - `html_path`, `markdown_path`: write the page and the Markdown there
      (the Markdown's pictures go into `<stem>-pictures/` beside it).
    - `pictures`: draw the pictures (needs matplotlib, the `bench` extra).
    - `title`: the page's heading.
    - `versions`: rows of versions (plain dicts, `framework` and `version` first:
      `tables.kinds.plain.versions_table`), shown as a `{"kind": "versions", "rows": versions}`
      report would be, after the reports; a sweep's own JSON (`versions --out`) goes
      in `reports`.

    **Returns:** a `Report`. **Raises:** `DocumentError` naming a report it
    cannot read, or an output path it must not write (a symlink, an input, another
    output's: `outputs.check_paths`), `ValueError` when there is none.
    """
    md_path = None if markdown_path is None else Path(markdown_path)
    pictures_dir = None if md_path is None else md_path.parent / f"{md_path.stem}-pictures"
    paths = {"--out": html_path, "--markdown": md_path, "--markdown's pictures": pictures_dir}
    try:  # before anything is read or drawn
        outputs.check_paths(paths, [r for r in reports if isinstance(r, (str, Path))])
    except outputs.OutputError as error:
        raise DocumentError(str(error)) from None
    documents = [_document(r, i) for i, r in enumerate(reports, 1)]
    if versions is not None:  # the same section a {"kind": "versions"} report makes
        rows = {"kind": "versions", "rows": [dict(row) for row in versions]}
        documents.append(Document("versions", "versions rows", rows))
    if not documents:
        raise ValueError("reports: give at least one run, compare or bench JSON report")
    found = sections(documents, pictures=pictures)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    kinds = ", ".join(f"{d.kind} ({Path(d.source).name})" for d in documents)
    meta = f"Made {stamp} from: {kinds}."
    page = html.page(title, meta, found)
    where = f"--markdown's pictures {pictures_dir}"
    try:  # each file whole or not at all; a full disk names the file, never a traceback
        text = markdown.document(title, meta, found, pictures_dir)
        report = Report(documents, page, text, found)
        if html_path is not None:
            where = f"--out {html_path}"
            report.html_path = Path(html_path)
            outputs.write_text(report.html_path, page)
        if md_path is not None:
            where = f"--markdown {md_path}"
            outputs.write_text(md_path, text)
            report.markdown_path = md_path
    except OSError as error:
        raise DocumentError(f"{where}: cannot write it: {error.strerror or error}") from None
    return report


def _document(report: Any, number: int) -> Document:
    if isinstance(report, Document):
        return report
    if isinstance(report, (str, Path)):
        return read(report)
    if hasattr(report, "to_json"):
        report = report.to_json()
    if isinstance(report, dict):
        return from_data(report, f"report {number}")
    raise DocumentError(
        f"reports[{number - 1}]: expected a path or a parsed JSON report, "
        f"got {type(report).__name__}"
    )
