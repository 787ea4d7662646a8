"""The report's content, renderer-free: sections of notes, tables and pictures.

`sections(documents)` reads every run, compare and bench report given and
returns what HTML and Markdown both show, in this order: the matrix and
mutation score of each run; each compare's table, precision bits and
pictures; each bench's table, targets and plot; each version sweep's matrix
(`conformance.versions.page`), and the runs' version sets where they differ;
the machines and versions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from . import tables
from .documents import Document


@dataclass
class Section:
    """A titled part of the report. `pictures`: `(title, PNG bytes)`."""

    title: str
    anchor: str
    notes: list[str] = field(default_factory=list)
    tables: list[tables.Table] = field(default_factory=list)
    pictures: list[tuple[str, bytes]] = field(default_factory=list)


def _suffix(documents: Sequence[Document], doc: Document) -> str:
    # "Matrix", or "Matrix (run.json)" when there are several of a kind.
    same = [d for d in documents if d.kind == doc.kind]
    return f" ({doc.source})" if len(same) > 1 else ""


def sections(documents: Sequence[Document], *, pictures: bool = True) -> list[Section]:
    """Everything the report shows. `pictures=False` skips matplotlib (no `bench` extra).

    Pictures need matplotlib; without it, each section says so in a note.
    """
    from ..versions import page as versions_page
    from . import pictures as drawing

    found: list[Section] = []
    can_draw = pictures and _has_matplotlib()
    why_not = (
        "pictures left out: matplotlib is not installed (pip install 'remat-conformance[bench]')"
        if pictures and not can_draw
        else "pictures left out on request"
    )
    for i, doc in enumerate(documents):
        data, suffix = doc.data, _suffix(documents, doc)
        if doc.kind == "run":
            section = Section(f"Conformance matrix{suffix}", f"run-{i}")
            failed = "failed" if data.get("failed") else "passed"
            section.notes.append(
                f"The run {failed} · {data.get('seconds', 0):.0f} s wall · canonical port "
                f"{data.get('canonical', '?')}"
                + (" · interrupted: partial results" if data.get("interrupted") else "")
            )
            section.tables.append(tables.matrix(data))
            failed_outcomes = tables.failures(data)
            if failed_outcomes is not None:
                section.tables.append(failed_outcomes)
            mutants = tables.mutants(data)
            if mutants is not None:
                section.tables.append(mutants)
            else:
                section.notes.append("No mutation run in this report (--no-mutants).")
        elif doc.kind == "compare":
            section = Section(f"Compare{suffix}", f"compare-{i}")
            section.tables += [tables.compare_table(data), tables.precision_table(data)]
            if can_draw:
                section.pictures += [
                    (title, png) for title, png in drawing.compare_pictures(data).values()
                ]
            else:
                section.notes.append(why_not)
        elif doc.kind == "versions":
            section = Section(f"Versions{suffix}", f"versions-{i}")
            section.tables += versions_page.tables(data)
        else:
            section = Section(f"Bench{suffix}", f"bench-{i}")
            section.tables += [tables.bench_table(data), tables.bench_targets(data)]
            if can_draw:
                section.pictures.append(("Bench: memory and time against depth",
                                         drawing.bench_picture(data)))  # fmt: skip
            else:
                section.notes.append(why_not)
        found.append(section)
    run_versions = versions_page.run_versions(documents)
    if run_versions is not None:
        found.append(Section("Versions of the runs", "run-versions", tables=[run_versions]))
    found.append(Section("Machine and versions", "machine", tables=[tables.machine(documents)]))
    return found


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
