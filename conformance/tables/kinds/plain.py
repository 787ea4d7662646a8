"""The page's own tables, from the JSON reports: the machines and versions (`machine`), and
plain versions rows (`versions_table`).

Every builder takes a report's parsed JSON (a `dict`) and returns a model `Table`
(`conformance.tables.model`) that every renderer draws. Symbols read without colour: ✓
within the bound / met, ✗ not, `inconclusive` for a time ratio whose spread is too wide to
say; each cell's mark is what its words say (`marked`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model import Cell, Column, Table, TableBuilder

PASSING = {"pass": "✓ pass", "reference": "ref", "skip": "skip", "xfail": "xfail (expected)"}
FAILING = {"fail": "✗ fail", "crashed": "✗ crash", "timeout": "✗ hang", "xpass": "✗ xpass"}


def marked(text: Any) -> Cell:
    """A cell whose mark its own words give: ✓ pass, ✗ fail, ⚠, `!` or inconclusive warn."""
    text = str(text)
    if text.startswith("✓"):
        return Cell(text, "pass")
    if text.startswith("✗") or " ✗" in text:
        return Cell(text, "fail")
    if "inconclusive" in text or text.endswith("!") or text.startswith("⚠"):
        return Cell(text, "warn")
    return Cell(text)


class PlainBuilder(TableBuilder):
    """The page's tables: a header of plain columns, rows of words marked as they read."""

    def __init__(self, title: str, header: Sequence[str], **options: Any) -> None:
        super().__init__(title, [Column(h) for h in header], **options)

    def row(self, key: str, cells: Sequence[Any]) -> None:
        self.add([marked(c) for c in cells], key)


# ---------------------------------------------------------------------------
# machine and versions
# ---------------------------------------------------------------------------


#: What the machine row says of a report's `machine`, in this order, each with its label.
_MACHINE_FIELDS = (
    ("os", "{}"),
    ("platform", "{}"),
    ("cpu", "{}"),
    ("cores", "{} cores"),
    ("cpus", "{} CPUs"),
    ("python", "Python {}"),
)


def machine(documents: Sequence[Any]) -> Table:
    """Where each report was made, and the versions it names."""
    table = PlainBuilder(
        title="Machine and versions",
        header=["report", "kind", "machine", "versions"],
        kind="machine",
    )
    for doc in documents:
        data = doc.data
        found = data.get("machine") or {}
        # Counts and versions named, so that "2" reads as the cores it is.
        where = ", ".join(
            label.format(found[k]) for k, label in _MACHINE_FIELDS if found.get(k) is not None
        )
        if not where and data.get("cores"):  # compare says its cores, not its machine
            where = f"{data['cores']} cores"
        load = found.get("load_average_1min") or data.get("load_average_1min") or data.get("load")
        if load:
            said = ", ".join(f"{v:.1f} {k.replace('_', ' ')}" for k, v in load.items())
            where += f"{' · ' if where else ''}load (1-minute average) {said}"
        versions: dict[str, str] = {}
        for port in data.get("ports") or []:
            versions.update(port.get("versions") or {})
        for found_versions in (data.get("versions") or {}).values():
            versions.update(found_versions)
        versions.update(found.get("packages") or {})
        table.row(
            doc.source,
            [
                doc.source,
                doc.kind,
                where or "not recorded",
                ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
            ],
        )
    return table.build()


# ---------------------------------------------------------------------------
# versions
# ---------------------------------------------------------------------------

#: The columns a versions row is read by first, in this order; any other key follows.
VERSION_COLUMNS = ("framework", "version", "port", "status", "verdict", "failed", "note")


def versions_table(rows: Sequence[Any]) -> Table:
    """A versions sweep's matrix, from a plain list of rows (dicts: `framework` and
    `version` first, then `port`, `status` or `verdict`, `failed`, `note`, then any other
    key, each a column; a value that is a dict, such as property -> status, is one column
    per key). A cell reads ✓ or ✗ where the value is a status (`pass`, `fail`...) or a
    boolean `failed` or `passed`."""
    flat = []
    for row in rows:
        cells: dict[str, Any] = {}
        for key, value in dict(row).items():
            if isinstance(value, dict):
                cells.update({f"{key}.{k}": v for k, v in value.items()})
            else:
                cells[key] = value
        flat.append(cells)
    keys = list(dict.fromkeys(k for cells in flat for k in cells))
    header = [k for k in VERSION_COLUMNS if k in keys] + [
        k for k in keys if k not in VERSION_COLUMNS
    ]
    table = PlainBuilder(
        title="Versions",
        header=header,
        caption="One row per framework version the sweep tried: ✓ passed, ✗ failed, with "
        "what each row reports",
        kind="versions",
    )
    for cells in flat:
        table.row(
            " ".join(str(cells.get(k, "")) for k in ("framework", "version", "port")).strip(),
            [_version_cell(k, cells.get(k)) for k in header],
        )
    return table.build()


def _version_cell(key: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        if key in ("failed", "fails"):
            return "✗ failed" if value else "✓ passed"
        if key in ("passed", "ok", "conforms"):
            return "✓ passed" if value else "✗ failed"
        return "yes" if value else "no"
    text = str(value)
    if text in PASSING and text != "skip":
        return PASSING[text]
    if text in FAILING:
        return FAILING[text]
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return text
