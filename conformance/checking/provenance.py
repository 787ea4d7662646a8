"""Who measured a port's evidence: the suite's own instrument, or the port itself.

An evidence record (`contract.BackwardRecord`) is *measured by the suite*
when the suite's own instrument, attached to the framework, read it: a
built-in port, or an outside Python port that writes the model only and
inherits its stack's record methods. It is *reported by the port* when the
port's own code produced it: every process port (the suite sees its answers
on a pipe, never its memory), and a Python port that overrides a record
method (`backward_record`, `exercise_record`, `traced_record`) or brings an
instrument of its own. The suite decides from where the code that made the
record lives, never from the record's word; reports show it beside the
verdicts (docs/PROTOCOL.md and the README, *trust boundary*).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from implementations.contract import MEASURED_BY_PORT, MEASURED_BY_SUITE, BackwardRecord

#: The packages whose code is the suite's own.
SUITE_PACKAGES = ("implementations", "conformance")
_RECORD_METHODS = ("backward_record", "exercise_record", "traced_record")


def _unwrapped(port: Any) -> Any:
    # The worker wraps ports to announce their calls (`running.worker.Announced`).
    return getattr(port, "_implementation", port)


def _suite_code(module: str) -> bool:
    return module.split(".", 1)[0] in SUITE_PACKAGES


def measured_by(port: Any) -> str:
    """`MEASURED_BY_SUITE` or `MEASURED_BY_PORT` for the records `port` returns."""
    port = _unwrapped(port)
    if getattr(port, "self_reported", False):
        return MEASURED_BY_PORT
    for method in _RECORD_METHODS:
        owner = next((k for k in type(port).__mro__ if method in vars(k)), None)
        if owner is not None and not _suite_code(owner.__module__):
            return MEASURED_BY_PORT
    instrument = getattr(getattr(port, "stack", None), "instrument", None)
    if instrument is not None and not _suite_code(getattr(instrument, "__module__", "") or ""):
        return MEASURED_BY_PORT
    if getattr(port, "stack", None) is None:  # an Implementation that is not a Port
        owner = next((k for k in type(port).__mro__ if "backward_record" in vars(k)), None)
        if owner is None or not _suite_code(owner.__module__):
            return MEASURED_BY_PORT
    return MEASURED_BY_SUITE


def stamped(port: Any, record: Any) -> Any:
    """`record` with `measured_by` set by the suite (anything else returned as it is)."""
    if not isinstance(record, BackwardRecord):
        return record
    return dataclasses.replace(record, measured_by=measured_by(port))


def describe(port: Any) -> dict[str, str]:
    """For reports: who measures the port's evidence, in a word and in a sentence, and whose
    policy expectations it is held to."""
    from . import policy_expectations

    who = measured_by(port)
    framework = getattr(_unwrapped(port), "framework", "") or "its framework"
    if who == MEASURED_BY_PORT:
        sentence = (
            "self-reported: the port's own code measured its evidence (a process port, or a "
            "Python port that overrides its records); the suite checks the records it is given"
        )
    else:
        sentence = f"the suite's own instrument, attached to {framework}"
    return {
        "measured_by": who,
        "evidence": sentence,
        "family": policy_expectations.family(_unwrapped(port)),
        "expectations": policy_expectations.source(_unwrapped(port)),
    }
