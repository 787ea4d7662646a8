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

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KINDS = ("run", "compare", "bench", "bench-policies", "scale", "versions")


class DocumentError(ValueError):
    """A file the report cannot use: the message starts with the file's name."""


@dataclass(frozen=True)
class Document:
    """One report as read: its kind (`run`, `compare`, `bench`), where it came from, its data."""

    kind: str
    source: str
    data: dict[str, Any]


def kind_of(data: Any) -> str | None:
    """One of `KINDS`, or None when `data` is none of them. A report names its own `kind`
    (older ones did not: their fields tell); a named kind its fields contradict is none."""
    if not isinstance(data, dict):
        return None
    found = _shape(data)
    declared = data.get("kind")
    return found if declared is None or declared == found else None


def _shape(data: dict[str, Any]) -> str | None:
    if data.get("kind") == "versions" and isinstance(data.get("rows"), list):
        return "versions"
    if "settings" in data and "results" in data:
        return "bench-policies" if "policies" in data else "bench"
    if "settings" in data and isinstance(data.get("rows"), list):
        return "scale"
    ports = data.get("ports")
    if not isinstance(ports, list):
        return None
    if "canonical" in data and "notes" in data:
        return "compare"
    if "schema" in data and all(isinstance(p, dict) and "outcomes" in p for p in ports):
        return "run"
    return None


def read(path: str | Path) -> Document:
    """The report in `path`; `DocumentError` naming the file when it is unreadable or unknown."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise DocumentError(f"{path}: cannot read it ({error.strerror or error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise DocumentError(f"{path}: not JSON ({error})") from None
    return from_data(data, str(path))


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
    return Document(kind, source, data)
