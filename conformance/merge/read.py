"""Read one `run --json` report, and refuse anything merge cannot trust, naming the file."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..running.results import MUTANT_RAN, RAN
from ..running.runner import FAILING
from ..tables.reports import OLDEST_SCHEMA, ReportError, check_run, load

__all__ = ["OLDEST_SCHEMA", "ReportError", "Source", "read", "read_all"]


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
    def verdict(self) -> str:
        """ "failed" (as `failed` judges), "interrupted", "nothing checked" (no property ran and
        no mutant was hunted: its ports were not installed) or "passed": a report that
        checked nothing never reads passed."""
        if self.failed:
            return "failed"
        if self.data.get("interrupted"):
            return "interrupted"
        ran = any(o.get("status") in RAN for p in self.ports for o in p["outcomes"])
        hunted = any(m.get("status") in MUTANT_RAN for m in self.data.get("mutants") or [])
        return "passed" if ran or hunted else "nothing checked"

    @property
    def machine(self) -> dict[str, Any]:
        return self.data.get("machine") or {}

    @property
    def ports(self) -> list[dict[str, Any]]:
        return self.data["ports"]


def read(path: str | Path, number: int = 1) -> Source:
    """The run report in `path`, checked (`tables.reports`); `ReportError` when it is
    unreadable or not one."""
    data = load(path)
    check_run(data, str(path))
    return Source(number, str(path), data)


def read_all(paths: Iterable[str | Path]) -> list[Source]:
    """Every report, numbered in the order given."""
    return [read(path, number) for number, path in enumerate(paths, start=1)]
