"""Every report as data: a `Document` of sections, each a run of paragraphs, lists and `Table`s.

A builder (one per report kind: `conformance.tables.kinds`) makes a `Document` from the JSON
the command writes; the renderers (`conformance.tables.render`) draw any `Document`: rich for
the terminal, Markdown, HTML and CSV. Nothing here knows how it will be drawn.

A cell's `mark` names its state from one vocabulary (`MARKS`); each mark has a tone, and a
renderer styles tones, never marks, so a new state (such as `not-installed`) is one entry in
`MARKS`, not a case in each renderer. The text itself says the verdict (✓, ✗, ...): a mark
only adds colour, so nothing relies on colour alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

#: A mark -> its tone. Tones: good, bad, warn, muted, strong, "" (plain).
MARKS = {
    "": "",
    "pass": "good",
    "fail": "bad",
    "warn": "warn",
    "skip": "warn",
    "unavailable": "warn",
    "not-installed": "muted",
    "muted": "muted",
    "reference": "muted",
    "heading": "strong",
}
#: How a column's numbers are formatted (`conformance.tables.numbers`); "text" for words.
NUMBER_KINDS = ("text", "count", "ratio", "bytes", "seconds", "error/bound")
ALIGNS = ("left", "right", "center")


@dataclass(frozen=True)
class Cell:
    """One cell: its text (the whole verdict in words or symbols), an optional mark (its
    state, `MARKS`), a note (a secondary line: dim in a terminal, after a line break
    elsewhere), a link (an anchor or URL), a title (a tooltip) and a bar (`fill`, 0 to 1: HTML
    draws it under the text; a renderer that cannot draw it shows the text alone)."""

    text: str = ""
    mark: str = ""
    note: str = ""
    link: str = ""
    title: str = ""
    fill: float | None = None

    def __post_init__(self):
        if self.mark not in MARKS:
            raise ValueError(f"mark: {self.mark!r} is not one of {sorted(MARKS)}")

    @property
    def tone(self) -> str:
        return MARKS[self.mark]


@dataclass(frozen=True)
class Column:
    """A column: its heading, alignment, the kind of number it holds, whether its cells
    may wrap between words (a terminal keeps a no-wrap column's cells on one line), a
    short heading for a narrow renderer (a terminal's 80 columns; empty: the heading), and
    `drop`: when a terminal is too narrow for the table, the columns of the highest `drop`
    are left out first, the rightmost first among equals; -1: never (nor the first column)."""

    name: str
    align: str = "left"
    number: str = "text"
    wrap: bool = False
    short: str = ""
    drop: int = 0

    def __post_init__(self):
        if self.align not in ALIGNS:
            raise ValueError(f"align: {self.align!r} is not one of {ALIGNS}")
        if self.number not in NUMBER_KINDS:
            raise ValueError(f"number: {self.number!r} is not one of {NUMBER_KINDS}")


@dataclass(frozen=True)
class Row:
    """A row of cells; `key` names what it is about (a port, a mutant, a bench line: HTML's
    `data-key`); `heading`: a group's title spanning the row (its first cell's text).
    `details`: a table about the row (one line per cell: its message, its replay command),
    which HTML shows on demand under the table (open where `failed`), Markdown after it for
    a failed row, and a terminal leaves to its own details list."""

    cells: tuple[Cell, ...]
    key: str = ""
    heading: bool = False
    details: Table | None = None

    @property
    def failed(self) -> bool:
        return any(c.mark == "fail" for c in self.cells)


@dataclass(frozen=True)
class Table:
    """A titled table. `note`: one line right under it (what it left out, and why);
    `caption`: what its symbols mean, under that; `kind`: a name for its rows' ids
    (`matrix`, `compare`...); `collapsed`: HTML shows it on demand."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...] = ()
    caption: str = ""
    note: str = ""
    kind: str = ""
    collapsed: bool = False

    def __post_init__(self):
        for index, row in enumerate(self.rows):
            if not row.heading and len(row.cells) != len(self.columns):
                raise ValueError(
                    f"rows[{index}]: {len(row.cells)} cells for {len(self.columns)} columns"
                )

    @property
    def header(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def keys(self) -> list[str]:
        return [row.key for row in self.rows if not row.heading]


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of text; `mark` gives it a tone (a warning, a failure)."""

    text: str
    mark: str = ""


@dataclass(frozen=True)
class Items:
    """A titled list, one item a line; an item indented by two spaces nests under the one
    before. `marks`: one mark per item, or none."""

    title: str
    items: tuple[str, ...]
    marks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Figure:
    """A picture written beside the document: its title (the caption) and where it is,
    relative to the document (a renderer links it; it never reads it)."""

    title: str
    path: str


Block = Table | Paragraph | Items | Figure


@dataclass(frozen=True)
class Section:
    """A titled part of a document (the title may be empty), its blocks in order."""

    title: str
    blocks: tuple[Block, ...] = ()

    @property
    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]


@dataclass(frozen=True)
class Document:
    """A whole report of one kind (`run`, `compare`, `bench`...): its title and sections."""

    kind: str
    title: str
    sections: tuple[Section, ...] = field(default=())

    @property
    def tables(self) -> list[Table]:
        return [t for s in self.sections for t in s.tables]


class TableBuilder:
    """Rows added one by one, then frozen into a `Table` (`build`)."""

    def __init__(self, title: str, columns: Sequence[Column | str], **options) -> None:
        self.title = title
        self.columns = tuple(c if isinstance(c, Column) else Column(c) for c in columns)
        self.rows: list[Row] = []
        self.options = options

    def add(
        self,
        cells: Iterable[Cell | str | int | float],
        key: str = "",
        details: Table | None = None,
    ) -> None:
        found = tuple(c if isinstance(c, Cell) else Cell(str(c)) for c in cells)
        self.rows.append(Row(found, key, details=details))

    def heading(self, text: str, key: str = "") -> None:
        self.rows.append(Row((Cell(text, "heading"),), key, heading=True))

    def build(self) -> Table:
        return Table(self.title, self.columns, tuple(self.rows), **self.options)
