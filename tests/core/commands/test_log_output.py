"""Off a terminal (issue 60, item 4): a line of text is not wrapped at 80 columns
mid-phrase, while tables and legends are still laid out for the width."""

from __future__ import annotations

import io

from rich.table import Table

from conformance.terminal import style

SENTENCE = " · ".join(f"port{n} {n}s ({n}s new shapes)" for n in range(8))


def _log(monkeypatch) -> tuple[io.StringIO, object]:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(style, "OPTIONS", style.OutputOptions())
    out = io.StringIO()  # not a terminal
    return out, style.console(file=out)


def test_a_line_of_text_is_printed_whole(monkeypatch):
    out, console = _log(monkeypatch)
    assert len(SENTENCE) > style.DEFAULT_WIDTH
    console.print(f"time: 9s wall · {SENTENCE}", highlight=False)
    assert out.getvalue() == f"time: 9s wall · {SENTENCE}\n"


def test_tables_and_legends_are_still_laid_out_for_the_width(monkeypatch):
    out, console = _log(monkeypatch)
    table = Table("port", "note")
    table.add_row("pytorch", SENTENCE)
    console.print(table)
    style.print_legend(console, SENTENCE)
    lines = out.getvalue().splitlines()
    assert len(lines) > 4
    assert max(len(line) for line in lines) <= style.DEFAULT_WIDTH


def test_a_width_asked_for_wraps_text_as_before(monkeypatch):
    monkeypatch.setattr(style, "OPTIONS", style.OutputOptions(width=40))
    out = io.StringIO()
    style.console(file=out).print(SENTENCE)
    assert max(len(line) for line in out.getvalue().splitlines()) <= 40
