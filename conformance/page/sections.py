"""The report's content, renderer-free: sections of model blocks (tables, paragraphs) and
pictures.

`sections(documents)` reads every report given and returns what HTML and Markdown both show:
first, where there are run or compare reports, "At a glance" (`tables.kinds.glance.summary`:
one row per port, conforms, policies honoured, the cost of wrapping twice); then a section
per report, in the order given, as its kind declares it (`kinds.KINDS`: a run's headline,
matrix and mutants; a compare's summary, policy and composition grids, precision and
pictures; a bench's tables and plot; ...); then the runs' version sets where they differ,
and the machines and versions the reports name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import implementations

from ..comparison import restore
from ..merge import Source, version_sets
from ..tables.kinds import glance, plain
from ..tables.kinds.version_sets import run_versions
from ..tables.model import Block, Paragraph, Table
from .documents import Document
from .kinds import KINDS, Picture

__all__ = ["Picture", "Section", "sections"]


@dataclass
class Section:
    """A titled part of the report."""

    title: str
    anchor: str
    blocks: list[Block] = field(default_factory=list)
    pictures: list[Picture] = field(default_factory=list)

    @property
    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]


def _suffix(documents: Sequence[Document], doc: Document) -> str:
    # "Matrix", or "Matrix (run.json)" when there are several of a kind.
    same = [d for d in documents if d.kind == doc.kind]
    return f" ({doc.source})" if len(same) > 1 else ""


def sections(documents: Sequence[Document], *, pictures: bool = True) -> list[Section]:
    """Everything the report shows. `pictures=False` skips matplotlib (no `bench` extra).

    Pictures need matplotlib; without it, each section that has some says so in a note.
    """
    found: list[Section] = []
    can_draw = pictures and _has_matplotlib()
    why_not = (
        "pictures left out: matplotlib is not installed "
        f"({implementations.install_command('bench')})"
        if pictures and not can_draw
        else "pictures left out on request"
    )
    runs = [d.data for d in documents if d.kind == "run"]
    compares = [restore.from_json(d.data) for d in documents if d.kind == "compare"]
    top = glance.summary(runs, compares)
    if top is not None:
        found.append(Section("At a glance", "summary", blocks=[top]))
    for i, doc in enumerate(documents):
        kind, suffix = KINDS[doc.kind], _suffix(documents, doc)
        anchor = f"{kind.anchor}-{i}" if kind.numbered or suffix else kind.anchor
        section = Section(kind.title + suffix, anchor, kind.blocks(doc.data, runs))
        if kind.pictures is not None and not can_draw:
            section.blocks.append(Paragraph(why_not))
        elif kind.pictures is not None:
            for drawn in kind.pictures(doc.data):
                if isinstance(drawn, Picture):
                    section.pictures.append(drawn)
                else:
                    section.blocks.append(drawn)
        found.append(section)
    run_sets = _run_versions(documents)
    if run_sets is not None:
        found.append(Section("Versions of the runs", "run-versions", blocks=[run_sets]))
    found.append(Section("Machine and versions", "machine", blocks=[plain.machine(documents)]))
    return found


def _run_versions(documents: Sequence[Document]) -> Table | None:
    """The run reports' version sets, where there are several (as `merge` finds them)."""
    runs = [Source(i, d.source, d.data) for i, d in enumerate(documents, 1) if d.kind == "run"]
    sets, of = version_sets(runs)
    reports = {name: [s.path for s in runs if of[s.number] == name] for name in sets}
    return run_versions(sets, reports)


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
