"""One table as CSV: a header row, then one row per table row (a group heading is a row of
its own, its text in the first column; a cell's note follows its text after a space)."""

from __future__ import annotations

import csv
import io

from ..model import Table


def table(found: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(found.header)
    for row in found.rows:
        cells = [" ".join(p for p in (c.text, c.note) if p) for c in row.cells]
        writer.writerow(cells + [""] * (len(found.columns) - len(cells)))
    return out.getvalue()
