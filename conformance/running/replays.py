"""A replay's blob: the test it belongs to, and Hypothesis's blob that replays its example.

A failure's replay command carries `--reproduce PORT:PROPERTY:VERSION:BLOB`: the port and
property that failed, the Hypothesis version that wrote the blob, and the blob. Hypothesis
replays a blob on whatever test it is given: on another property's strategy it replays some
other example, or cannot ("the shape of the test data has changed"), and on another port it
replays an example that passes. Either read "did not reproduce" and exit 0. So a blob says
whose it is, and a run that names another test refuses it, as a usage error
(`check`); a blob Hypothesis cannot replay is the run's error too (`cannot_replay`). The
older form `VERSION:BLOB` is still read: whose it is cannot then be told.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Replay:
    """A parsed `--reproduce`: `port` and `property` are empty for the older form."""

    port: str
    property: str
    version: str
    blob: str

    @property
    def test(self) -> str:
        """The test it belongs to, in words ("" when it does not say)."""
        return f"{self.port}'s {self.property}" if self.port else ""

    @property
    def hypothesis(self) -> tuple[str, str]:
        """What `hypothesis.reproduce_failure` takes: the version and the blob."""
        return self.version, self.blob


def make(port: str, prop: str, version: str, blob: str) -> str:
    """The text of `--reproduce` for a failure of `port`'s `prop`."""
    return f"{port}:{prop}:{version}:{blob}"


def parse(text: str) -> Replay:
    """`PORT:PROPERTY:VERSION:BLOB`, or the older `VERSION:BLOB`. Raises ValueError."""
    parts = text.split(":")
    if len(parts) == 4 and all(parts):
        return Replay(*parts)
    if len(parts) == 2 and all(parts):
        return Replay("", "", *parts)
    raise ValueError(
        f"must be PORT:PROPERTY:VERSION:BLOB, as a failure's replay command gives it, got {text!r}"
    )


def check(text: str, ports: Sequence[str], properties: Sequence[str]) -> None:
    """Refuse a replay for another test than the run's (ValueError, saying whose it is): a
    blob replays one port's property, so the run must name that port and that property,
    and no other (naming none is naming its own: `ports_and_properties`)."""
    replay = parse(text)
    if not replay.port:
        return
    ports, properties = list(dict.fromkeys(ports)), list(dict.fromkeys(properties))
    if ports != [replay.port] or properties != [replay.property]:
        asked = f"{', '.join(ports) or 'every port'} · {', '.join(properties) or 'every property'}"
        raise ValueError(
            f"the blob replays {replay.test} (Hypothesis {replay.version}), not this run's "
            f"{asked}: run it with --implementation {replay.port} --property {replay.property}"
        )


def ports_and_properties(
    text: str, ports: Sequence[str] | None, properties: Sequence[str] | None
) -> tuple[list[str], list[str]]:
    """The run's ports and properties, the blob's where the run names none."""
    replay = parse(text)
    ports, properties = list(ports or []), list(properties or [])
    if replay.port:
        ports = ports or [replay.port]
        properties = properties or [replay.property]
    return ports, properties


def cannot_replay(text: str, port: str, prop: str, why: BaseException) -> str:
    """The run's error for a blob Hypothesis cannot replay on `port`'s `prop`."""
    replay = parse(text)
    whose = f": it was made for {replay.test}" if replay.test else ""
    if replay.test == f"{port}'s {prop}":  # its own test, as another suite version drew it
        whose = ": it names this test, as another version of the suite's strategies drew it"
    return (
        f"--reproduce: Hypothesis cannot replay this blob on {port}'s {prop} ({why}){whose}; "
        "a blob replays only the test and the version that wrote it"
    )
