"""The one reader of the JSON reports every command writes: `merge`, `report` and the
renderers read files through it.

- `load`: a file's JSON, or `ReportError` naming the file (unreadable, not JSON);
- `kind_of`: which command wrote a report (`KINDS`): each names its `kind`; one written before
  reports named it is told by its fields (a run report: `schema` and ports with `outcomes`;
  compare: `canonical`, `ports` and `notes`; bench: `settings` and `results`, `policies` too
  for `bench --policies`, `frontier` for `bench --schedules`; scale: `settings` and `rows`;
  versions: `{"kind": "versions", "rows": [...]}`); a `merge --json` document is none of them;
- `check_run`: a run report of a schema this version reads, its shape checked once so that
  readers can index it freely.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..running.suite import SCHEMA

KINDS = ("run", "compare", "bench", "bench-policies", "bench-schedules", "scale", "versions")
#: The oldest run-report schema read (2: ports, outcomes and "failed" as today; reports
#: without "machine" are merged under "machine not recorded").
OLDEST_SCHEMA = 2


class ReportError(ValueError):
    """A report file that cannot be used: the message starts with the file's name."""


def load(path: str | Path) -> Any:
    """The JSON in `path`; `ReportError` naming the file when it is unreadable or not JSON."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise ReportError(f"{path}: cannot read it: {reason}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise ReportError(f"{path}: not JSON ({error.msg} at {where})") from None


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
        if "frontier" in data:  # bench --schedules: Revolve's frontier beside its results
            return "bench-schedules"
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


def check_run(data: Any, path: str) -> None:
    """Raise `ReportError` unless `data` is a `run --json` report of a schema merge reads."""
    expected = f"schema {OLDEST_SCHEMA} to {SCHEMA}"
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise ReportError(f"{path}: not a `run --json` report (a JSON {kind}, not an object)")
    if data.get("kind") == "merge":
        raise ReportError(
            f"{path}: a merged matrix (`merge --json`), not a `run --json` report: "
            "merge the run reports themselves"
        )
    if "schema" not in data:
        raise ReportError(
            f"{path}: no schema version: not a `run --json` report of remat-conformance "
            f"({expected} expected)"
        )
    schema = data["schema"]
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ReportError(f"{path}: schema must be an integer, got {schema!r} ({expected})")
    if schema > SCHEMA:
        raise ReportError(
            f"{path}: schema {schema} is newer than this remat-conformance reads ({expected}): "
            "merge with the version that wrote it, or upgrade"
        )
    if schema < OLDEST_SCHEMA:
        raise ReportError(
            f"{path}: schema {schema} is older than this remat-conformance reads ({expected}): "
            "run the suite again with this version"
        )
    _check_shape(data, path)


def _check_shape(data: dict[str, Any], path: str) -> None:
    # What merge reads, checked once here so that the rest can index freely.
    if not isinstance(data.get("failed"), bool):
        raise ReportError(f"{path}: 'failed' must be true or false")
    if not isinstance(data.get("ports"), list):
        raise ReportError(f"{path}: 'ports' must be a list")
    if not isinstance(data.get("machine", {}), dict):
        raise ReportError(f"{path}: 'machine' must be an object")
    mutants = data.get("mutants") or []
    if not isinstance(mutants, list) or not all(
        isinstance(m, dict) and isinstance(m.get("status"), str) for m in mutants
    ):
        raise ReportError(f"{path}: 'mutants' must be null or a list of objects with a 'status'")
    for index, port in enumerate(data["ports"]):
        where = f"{path}: ports[{index}]"
        if not isinstance(port, dict) or not isinstance(port.get("name"), str):
            raise ReportError(f"{where} must be an object with a 'name'")
        if not isinstance(port.get("state", ""), str):
            raise ReportError(f"{where} ({port['name']}): 'state' must be a string")
        if not isinstance(port.get("outcomes"), list):
            raise ReportError(f"{where} ({port['name']}): 'outcomes' must be a list")
        for outcome in port["outcomes"]:
            if not (
                isinstance(outcome, dict)
                and isinstance(outcome.get("property"), str)
                and isinstance(outcome.get("status"), str)
            ):
                raise ReportError(
                    f"{where} ({port['name']}): every outcome needs a 'property' and a 'status'"
                )
