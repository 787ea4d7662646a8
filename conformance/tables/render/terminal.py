"""Any document on a console (rich): tables whole, then their captions, lists and notes.

Output never loses data. A table is printed at the console's width when it fits there
(cells wrap between words), and otherwise at the least width that holds every cell whole
(`print_table`): wider than the terminal then, but no column dropped and no number cut.
Captions are paragraphs of their own, wrapped between words. Off a terminal, with `--plain`
or `NO_COLOR`, the console (`terminal.style.console`) draws no colour: the text is aligned
plain text, and ASCII rules under `--plain`.

A cell's tone is its colour (`TONE_STYLES`); its text says the same without colour.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text

from ...terminal import style
from ..model import MARKS, Cell, Document, Figure, Items, Paragraph, Table

#: A tone -> its rich style.
TONE_STYLES = {
    "good": "green",
    "bad": "bold red",
    "warn": "yellow",
    "muted": "dim",
    "strong": "bold",
    "": "",
}


def styled(text: str, tone: str) -> str:
    """`text` (plain, escaped here) as markup in the tone's style."""
    found = TONE_STYLES[tone]
    return f"[{found}]{escape(text)}[/]" if found and text else escape(text)


def markup(cell: Cell) -> str:
    """A cell as rich markup: its text in its tone, its note dim on the next line."""
    text = styled(cell.text, cell.tone)
    if cell.note:
        note = styled(cell.note, "muted")
        text = f"{text}\n{note}" if cell.text else note
    return text


def narrow_table(title: str = "") -> RichTable:
    """A table with a simple header rule and narrow gaps, so that reports fit 80 columns."""
    return RichTable(
        title=title or None,
        box=box.ASCII2 if style.OPTIONS.plain else box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,
        show_edge=False,  # the two columns an edge takes are a number's, at 80 columns
        title_justify="left",
    )


def rich_table(found: Table, separated: bool = False) -> RichTable:
    """The model's table as a rich table. `separated`: a rule under every row (rows of
    several lines read apart); a group heading always starts a section."""
    grid = narrow_table(escape(found.title))
    for column in found.columns:
        grid.add_column(
            escape(column.short or column.name), justify=column.align, no_wrap=not column.wrap
        )
    width = len(found.columns)
    for index, row in enumerate(found.rows):
        if row.heading:
            if index:
                grid.add_section()
            grid.add_row(markup(row.cells[0]), *[""] * (width - 1))
            continue
        grid.add_row(*(markup(c) for c in row.cells), end_section=separated)
    return grid


def _whole_words(table: RichTable) -> None:
    """Give each wrapping column at least its longest word, and each column that does not
    wrap its longest line (its heading's too): rich would cut them with an ellipsis
    ("jax_checkpo…") rather than widen the table."""
    for column in table.columns:
        cells = [column.header, *column.cells]
        texts = [Text.from_markup(cell).plain for cell in cells if isinstance(cell, str)]
        if column.no_wrap:
            words = [len(line) for text in texts for line in text.splitlines()]
        else:
            words = [len(word) for text in texts for word in text.split()]
        if words:
            column.min_width = max(column.min_width or 0, *words)


def table_width(console: Console, table: RichTable) -> int:
    """The width to print `table` at: the console's, or more where a cell would be cut there."""
    _whole_words(table)
    # Measured with room to spare: a measurement never exceeds the width it is given.
    needed = console.measure(table, options=console.options.update_width(10_000)).minimum
    return max(console.width, needed)


def print_table(console: Console, table: RichTable) -> None:
    """Print `table` whole: never a dropped column or a cut cell (see the module docstring)."""
    # console.print(width=...) cannot go past the console's width: widen the console itself.
    width = console.width
    console.width = table_width(console, table)
    try:
        console.print(table, crop=False)
    finally:
        console.width = width


def print_items(console: Console, found: Items) -> None:
    if found.title:
        console.print(f"[bold]{escape(found.title)}[/]")
    for index, item in enumerate(found.items):
        tone = MARKS[found.marks[index]] if found.marks else ""
        console.print(f"  {styled(item, tone)}", highlight=False, soft_wrap=True)


def print_paragraph(console: Console, found: Paragraph) -> None:
    console.print(styled(found.text, MARKS[found.mark]), highlight=False, soft_wrap=True)


def print_block(console: Console, block, separated: bool = False) -> None:
    """One table (then its caption, wrapped and dim), list or paragraph."""
    if isinstance(block, Table):
        print_table(console, rich_table(block, separated))
        if block.note:  # wrapped between words at the width, as the table is laid out
            console.print(escape(block.note), highlight=False, overflow="fold")
        if block.caption:
            style.print_legend(console, escape(block.caption))
        console.print()
    elif isinstance(block, Items):
        print_items(console, block)
    elif isinstance(block, Figure):
        console.print(f"picture: {escape(block.title)} ({escape(block.path)})", highlight=False)
    else:
        print_paragraph(console, block)


def print_document(console: Console, found: Document) -> None:
    """Every section: its title in bold (when it has one), then its blocks."""
    for section in found.sections:
        if section.title:
            console.print(f"\n[bold]{escape(section.title)}[/]")
        for block in section.blocks:
            print_block(console, block)
