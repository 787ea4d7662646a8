"""Read the JSON reports the report is made of, and tell which command wrote each.

Each names its `kind` (`run`, `compare`, `bench`, `bench-policies`, `scale`, `versions`);
one written before reports named it is told by its fields:

- `run --json`: has `schema` and `ports` whose entries have `outcomes`;
- `compare --json`: has `canonical`, `ports` and `notes`;
- `bench.json`: has `settings` and `results`;
- `bench --policies`'s `bench-policies.json`: has `settings`, `results` and `policies`;
- `bench --scale`'s `scale.json`: has `settings` and `rows`;
- versions: `{"kind": "versions", "rows": [...]}`: a version sweep as `versions --out`
  writes it (`conformance.versions`: its sets and degradations too), or a plain list of
  rows, one dict a row.

Anything else (a `merge --json` document too: merge its runs' reports first,
or pass the runs themselves) is refused with the file's name and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..tables.reports import ReportError, check_run, kind_of, load

#: A file the report cannot use: the message starts with the file's name.
DocumentError = ReportError


@dataclass(frozen=True)
class Document:
    """One report as read: its kind (`run`, `compare`, `bench`), where it came from, its data."""

    kind: str
    source: str
    data: dict[str, Any]


def read(path: str | Path) -> Document:
    """The report in `path` (`tables.reports.load`); `DocumentError` naming the file when it
    is unreadable or of no kind we know."""
    return from_data(load(path), str(path))


def from_data(data: Any, source: str = "<data>") -> Document:
    """A `Document` from an already parsed report; `DocumentError` when it is none we know."""
    kind = kind_of(data)
    if kind is None:
        hint = (
            " (a merge --json document: pass the runs' own reports)"
            if isinstance(data, dict) and "groups" in data
            else ""
        )
        raise DocumentError(
            f"{source}: not a run, compare or bench JSON report{hint}; "
            "make one with `run --json`, `compare --json` or `bench --out DIR` "
            "(`--policies`, `--scale` too)"
        )
    if kind == "run":  # held to the writer's fields and schema, as merge holds it
        check_run(data, source)
    return Document(kind, source, data)
