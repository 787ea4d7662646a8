"""Read one `run --json` report, and refuse anything merge cannot trust, naming the file."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..running.runner import FAILING
from ..running.suite import SCHEMA

#: The oldest report schema merge reads (2: ports, outcomes and "failed" as today;
#: reports without "machine" are merged under "machine not recorded").
OLDEST_SCHEMA = 2


class ReportError(ValueError):
    """A report file merge cannot read: the message starts with the file's name."""


@dataclass(frozen=True)
class Source:
    """One report as read: its number in the merge (1, 2, ...), where it came from, its data."""

    number: int
    path: str
    data: dict[str, Any]

    @property
    def failed(self) -> bool:
        """Judged from what the report holds, never from its own "failed" flag.

        A port failed to load, or crashed or hung while loading; an outcome that
        fails; a mutant not killed; or the canonical port crashed.
        """
        for port in self.ports:
            if port.get("state", "available") not in ("available", "unavailable"):
                return True
            if any(outcome["status"] in FAILING for outcome in port["outcomes"]):
                return True
        mutants = self.data.get("mutants") or []
        if any(m.get("status") not in ("killed", "unavailable") for m in mutants):
            return True
        return bool(self.data.get("canonical_failure"))

    @property
    def machine(self) -> dict[str, Any]:
        return self.data.get("machine") or {}

    @property
    def ports(self) -> list[dict[str, Any]]:
        return self.data["ports"]


def read(path: str | Path, number: int = 1) -> Source:
    """The report in `path`, checked; `ReportError` when it is unreadable or not one."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise ReportError(f"{path}: cannot read it: {reason}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise ReportError(f"{path}: not JSON ({error.msg} at {where})") from None
    check(data, str(path))
    return Source(number, str(path), data)


def read_all(paths: Iterable[str | Path]) -> list[Source]:
    """Every report, numbered in the order given."""
    return [read(path, number) for number, path in enumerate(paths, start=1)]


def check(data: Any, path: str) -> None:
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
