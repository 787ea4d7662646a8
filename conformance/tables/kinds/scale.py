"""`bench --scale` (`scale.json`): per engine, node count, N and checkpoint, the largest
rank's bytes against the analytic minimum, and the step time."""

from __future__ import annotations

from typing import Any

from ..model import Cell, Column, Document, Paragraph, Section, Table, TableBuilder
from ..numbers import grouped
from .spread import NOISE, relative_spread, spread_words


def table(data: dict[str, Any]) -> Table:
    """One row per engine, node count, N and checkpoint."""
    s = data.get("settings") or {}
    found = TableBuilder(
        f"Bench · scale over ranks · batch ({s.get('batch', '?')}, {s.get('dim', '?')}) "
        f"split by rows, F = {s.get('features', '?')}",
        [
            Column("engine"),
            Column("nodes", "right", "count"),
            Column("N", "right", "count"),
            Column("checkpoint"),
            Column("bytes per rank", "right", "bytes"),
            Column("analytic minimum", "right", "bytes"),
            Column("ratio", "right", "ratio"),
            Column("step ms (median)", "right", "seconds"),
            Column("spread"),
        ],
        caption=f"{s.get('repeats', '?')} timed steps after one warm-up · bytes per rank: the "
        "largest rank's, against the analytic per-rank minimum · step ms: the median over the "
        f"timed steps, with n and the interquartile range over the median (noise: over "
        f"{NOISE:.0%}) · nodes: the processes (launcher nodes, or a framework's distributed "
        "processes) each sharded port ran on, all on this machine",
        kind="scale",
    )
    for row in data.get("rows") or []:
        worst = max(row["kept_bytes"])
        median, relative = relative_spread(row.get("times") or [])
        words = spread_words(relative, len(row.get("times") or []))
        checkpoint = "on" if row["checkpoint"] else "off"
        found.add(
            [
                row["engine"],
                row.get("nodes", 1),
                row["ranks"],
                checkpoint,
                grouped(worst),
                grouped(row["minimum_bytes"]),
                f"{worst / row['minimum_bytes']:.2f}",
                "-" if median is None else f"{median * 1e3:.2f}",
                Cell(words, "warn" if words.endswith("noise") else ""),
            ],
            key=f"{row['engine']} {row.get('nodes', 1)} {row['ranks']} {checkpoint}",
        )
    return found.build()


def failures(data: dict[str, Any]) -> list[Paragraph]:
    return [Paragraph(f"{what} failed: {why}", "fail") for what, why in data["failed"].items()]


def document(data: dict[str, Any]) -> Document:
    return Document(
        "scale", "Bench: scale over ranks", (Section("", (table(data), *failures(data))),)
    )
