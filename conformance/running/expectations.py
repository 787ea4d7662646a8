"""Expected failures: a text file per port, and warnings when an entry goes stale.

`<dir>/<port>.txt`, read with `--expectations DIR`, lists the properties a
port is known to fail, one per line, with the reason (the built-in ports
have none: without `DIR`, no failure is expected):

    # property   reason
    e            the framework has no instrument for saved tensors yet

A listed property that fails is reported as "xfail" and does not fail the
run. One that passes is "xpass": the entry is stale, and the run warns so
that it is removed. An entry naming no property is stale too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..checking.properties import BY_ID, PROPERTIES
from .runner import Outcome


@dataclass
class Expectations:
    """Expected failures of one port: property key -> reason, and warnings about the file."""

    port: str
    expected: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def apply(self, outcome: Outcome) -> Outcome:
        """Turn a listed property's fail into xfail, and its pass into a stale xpass."""
        reason = self.expected.get(outcome.property)
        if reason is None:
            return outcome
        if outcome.status == "fail":
            outcome.status = "xfail"
            outcome.message = f"expected failure ({reason}): {outcome.message}"
        elif outcome.status == "pass":
            outcome.status = "xpass"
            warning = (
                f"{self.port}: '{outcome.property}' is listed as failing but passed; remove it"
            )
            self.warnings.append(warning)
            outcome.message = warning
        return outcome


def parse(port: str, text: str, origin: str = "") -> Expectations:
    """Read an expectations file's text."""
    found = Expectations(port)
    keys = {p.key: p.key for p in PROPERTIES} | {p.id: p.key for p in PROPERTIES}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, reason = line.partition(" ")
        if name not in keys:
            known = ", ".join(sorted(BY_ID))
            found.warnings.append(
                f"{origin or port}:{number}: no property {name!r} (known: {known}); stale entry"
            )
            continue
        found.expected[keys[name]] = reason.strip() or "no reason given"
    return found


def load(port: str, directory: Path | None = None) -> Expectations:
    """The expectations for `port` from `directory` (none given, or no file: empty)."""
    if directory is None:
        return Expectations(port)
    path = Path(directory) / f"{port}.txt"
    return parse(port, path.read_text(), str(path)) if path.exists() else Expectations(port)
