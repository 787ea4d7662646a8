"""Any document on a console (rich): tables fitted to its width, then their notes, lists.

A table fits the console's width (`fitted`), trying in this order:

1. as the model lays it out: a column that wraps, wraps between words;
2. less its optional columns (`Column.drop` above 0), the highest `drop` first;
3. every column wrapping between words (a word is never cut);
4. less more columns, in the stated order (`drop_order`: the highest `Column.drop` first,
   the rightmost among equals; never the first column, nor one of `drop` -1);
5. as a last resort, long words folded across lines at the width (nothing is cut).

A column left out is named in a line under the table, with the width that shows them all.
The widths are laid out here (`_lay_out`, on rich's column measurements: rich is pinned in
constraints.txt), as rich's own collapsing could crop a table whose least widths fit.

Captions are paragraphs of their own, wrapped between words. Off a terminal, with
`--plain` or `NO_COLOR`, the console (`terminal.style.console`) draws no colour: the
text is aligned plain text, and ASCII rules under `--plain`.

A cell's tone is its colour (`TONE_STYLES`); its text says the same without colour.
"""

from __future__ import annotations

from dataclasses import replace

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.padding import Padding
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


def rich_table(found: Table, separated: bool = False, layout: str = "model") -> RichTable:
    """The model's table as a rich table. `separated`: a rule under every row (rows of
    several lines read apart); a group heading always starts a section. `layout`: "model"
    (its columns wrap as declared), "wrap" (every column wraps between words) or "fold"
    (every column wraps, folding a word longer than its column)."""
    grid = narrow_table(escape(found.title))
    for column in found.columns:
        grid.add_column(
            escape(column.short or column.name),
            justify=column.align,
            no_wrap=layout == "model" and not column.wrap,
            # A wrapping cell folds a word too long for its column (an API's dotted name),
            # never cuts it; a one-line cell is laid out whole (`_lay_out`).
            overflow="fold" if layout == "fold" or column.wrap else "ellipsis",
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


def _lay_out(console: Console, grid: RichTable, wraps: list[bool] | None = None) -> bool:
    """Give `grid`'s columns widths that fit the console, each at least its longest word (or
    line, where it does not wrap); the room left goes first to the columns the model keeps
    on one line (`wraps`: the model's `Column.wrap` of each), the narrowest first, so that
    short figures stay whole, then to the others in proportion to what each would take
    more. False when even the least widths do not fit. (rich's own collapsing shrinks the
    widest columns first, and a table whose least widths fit could come out wider than the
    console, cropped.)"""
    _whole_words(grid)
    options = console.options.update_width(console.width)
    ranges = [grid._measure_column(console, options, column) for column in grid.columns]
    room = console.width - grid._extra_width
    # A word longer than a third of the width may fold in a column of words (`Column.wrap`),
    # rather than push the other columns out; a number is never folded.
    wraps = wraps or [False] * len(ranges)
    longest = max(8, console.width // 3)
    widths = [
        min(r.minimum, longest + grid._get_padding_width(i)) if wraps[i] else r.minimum
        for i, r in enumerate(ranges)
    ]
    if sum(widths) > room:
        return False
    if sum(r.maximum for r in ranges) <= room:
        return True  # every cell on its own line: rich's natural widths
    wants = [r.maximum - width for r, width in zip(ranges, widths, strict=True)]
    # A one-line column needs its cells whole, not its heading (which wraps between words).
    cells = [
        max(
            [
                widths[i],
                *(_measure(console, options, c) + grid._get_padding_width(i) for c in column.cells),
            ]
        )
        for i, column in enumerate(grid.columns)
    ]
    for index in sorted(range(len(ranges)), key=lambda i: cells[i] - widths[i]):
        more = cells[index] - widths[index]
        if not wraps[index] and 0 < more <= room - sum(widths):
            widths[index] = cells[index]
            wants[index] = max(0, ranges[index].maximum - cells[index])
    spare, wanted = room - sum(widths), sum(wants)
    for index, (column, want) in enumerate(zip(grid.columns, wants, strict=True)):
        width = widths[index] + (spare * want // wanted if wanted else 0)
        column.width = width - grid._get_padding_width(index)
    return True


def _measure(console: Console, options, cell) -> int:
    """The widest line of a cell (rich markup) as the table prints it."""
    return Measurement.get(
        console, options, Text.from_markup(cell) if isinstance(cell, str) else cell
    ).maximum


def drop_order(found: Table) -> list[int]:
    """The columns a table too wide for the console leaves out, first to last (see the
    module docstring)."""
    candidates = [i for i, c in enumerate(found.columns) if i and c.drop >= 0]
    return sorted(candidates, key=lambda i: (-found.columns[i].drop, -i))


def without(found: Table, indexes: list[int]) -> Table:
    """`found` less the columns at `indexes` (a group heading keeps its one cell)."""
    kept = [i for i in range(len(found.columns)) if i not in indexes]
    rows = tuple(
        row if row.heading else replace(row, cells=tuple(row.cells[i] for i in kept))
        for row in found.rows
    )
    return replace(found, columns=tuple(found.columns[i] for i in kept), rows=rows)


def fitted(console: Console, found: Table, separated: bool = False) -> tuple[RichTable, str]:
    """`found` as a rich table that fits the console's width (the module docstring's order),
    and the line that names the columns it left out ("" when none)."""
    order = drop_order(found)
    optional = [i for i in order if found.columns[i].drop > 0]
    attempts = [("model", optional[:count]) for count in range(len(optional) + 1)]
    attempts += [("wrap", order[:count]) for count in range(len(optional), len(order) + 1)]
    for layout, dropped in attempts:
        kept = without(found, dropped)
        grid = rich_table(kept, separated, layout)
        if _lay_out(console, grid, [column.wrap for column in kept.columns]):
            break
    else:
        grid = rich_table(without(found, dropped), separated, "fold")
    if not dropped:
        return grid, ""
    # The width at which every column is back, each cell on one line as the model has it.
    whole = rich_table(found, separated, "model")
    needed = console.measure(whole, options=console.options.update_width(10_000)).maximum
    names = ", ".join(found.columns[i].name.replace("\n", " ") for i in sorted(dropped))
    said = f"left out to fit {console.width} columns: {names} (--width {needed} shows them)"
    return grid, said


def print_items(console: Console, found: Items) -> None:
    """A titled list, an item a line, wrapped between words at the console's width under its
    indent (off a terminal, a `LogConsole` prints each whole, for the viewer to wrap)."""
    if found.title:
        console.print(f"[bold]{escape(found.title)}[/]")
    for index, item in enumerate(found.items):
        tone = MARKS[found.marks[index]] if found.marks else ""
        if isinstance(console, style.LogConsole):
            console.print(f"  {styled(item, tone)}", highlight=False, soft_wrap=True)
        else:
            console.print(Padding(Text.from_markup(styled(item, tone)), (0, 0, 0, 2), expand=False))


def print_paragraph(console: Console, found: Paragraph) -> None:
    """Wrapped between words at the console's width (off a terminal, a `LogConsole` prints
    it whole, for the viewer to wrap); a muted paragraph is a legend, laid out for the width
    everywhere, as a table's caption is."""
    if found.mark == "muted":
        style.print_legend(console, escape(found.text))
        return
    console.print(styled(found.text, MARKS[found.mark]), highlight=False)


def print_verdict(console: Console, found: Paragraph) -> None:
    """A command's verdict, its last line: one line however narrow the console (a terminal
    wraps it on screen; a reader of the output finds it whole in its last line)."""
    console.print(styled(found.text, MARKS[found.mark]), highlight=False, soft_wrap=True)


def print_block(console: Console, block, separated: bool = False) -> None:
    """One table (then its caption, wrapped and dim), list or paragraph."""
    if isinstance(block, Table):
        # The title over the table, wrapped at the console's width, not the table's.
        if block.title:
            console.print(f"[bold]{escape(block.title)}[/]", highlight=False, overflow="fold")
        grid, dropped = fitted(console, replace(block, title=""), separated)
        console.print(grid)
        if dropped:
            console.print(escape(dropped), style="dim", highlight=False, overflow="fold")
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
