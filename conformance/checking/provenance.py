"""Who measured a port's evidence: the suite's own instrument on the port's own call, the
suite's instrument on the base's model, or the port itself.

An evidence record (`contract.BackwardRecord`) is *measured by the suite*
when the suite's own instrument, attached to the framework, read it off the
port's own call: a built-in port, or an outside Python port that inherits
its stack's record methods (which run, or trace, the very call whose values
are checked: `implementations.stacks.base.observes`). It is *measured on the
base's model* when a value method was set on the instance, where the record
never runs it: (e) refuses that (a class doing so is refused when it is
made). It is *reported by the port* when the
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

from implementations.contract import (
    MEASURED_BY_BASE,
    MEASURED_BY_PORT,
    MEASURED_BY_SUITE,
    BackwardRecord,
)
from implementations.stacks.base import EVIDENCE_OF

from . import policy_expectations

#: The packages whose code is the suite's own.
SUITE_PACKAGES = ("implementations", "conformance")
_RECORD_METHODS = ("backward_record", "exercise_record", "traced_record")


def _unwrapped(port: Any) -> Any:
    # The worker wraps ports to announce their calls (`running.worker.Announced`).
    return getattr(port, "_implementation", port)


def _suite_code(module: str) -> bool:
    return module.split(".", 1)[0] in SUITE_PACKAGES


def measured_by(port: Any) -> str:
    """`MEASURED_BY_SUITE`, `MEASURED_BY_BASE` or `MEASURED_BY_PORT` for the records `port`
    returns."""
    port = _unwrapped(port)
    if getattr(port, "self_reported", False):
        return MEASURED_BY_PORT
    makers = (*_RECORD_METHODS, *getattr(port, "evidence_methods", ()))
    if any(method in vars(port) for method in makers):  # a record set on the instance
        return MEASURED_BY_PORT
    for method in makers:
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
    if _values_beside_the_record(port):
        return MEASURED_BY_BASE
    return MEASURED_BY_SUITE


def _values_beside_the_record(port: Any) -> bool:
    # A class that overrides a value method below a record that never runs it is refused when
    # it is made (`implementations.stacks.base`); a method set on the instance is not, and its
    # values would be checked on one path while the record reads the base's model.
    return any(
        value in vars(port) and getattr(getattr(port, record, None), "observes", "") != value
        for value, record in EVIDENCE_OF.items()
    )


def stamped(port: Any, record: Any) -> Any:
    """`record` with `measured_by` set by the suite (anything else returned as it is)."""
    if not isinstance(record, BackwardRecord):
        return record
    return dataclasses.replace(record, measured_by=measured_by(port))


def describe(port: Any) -> dict[str, str]:
    """For reports: who measures the port's evidence, in a word and in a sentence, and whose
    policy expectations it is held to."""
    who = measured_by(port)
    framework = getattr(_unwrapped(port), "framework", "") or "its framework"
    if who == MEASURED_BY_BASE:
        sentence = (
            "the suite's instrument on the base's model, not on the call whose values are "
            "checked (a value method set on the instance): (e) refuses it"
        )
    elif who == MEASURED_BY_PORT:
        sentence = (
            "self-reported: the port's own code measured its evidence (a process port, or a "
            "Python port that overrides its records); the suite checks the records it is given"
        )
    else:
        sentence = f"the suite's own instrument on the port's own call, attached to {framework}"
    return {
        "measured_by": who,
        "evidence": sentence,
        "family": policy_expectations.family(_unwrapped(port)),
        "expectations": policy_expectations.source(_unwrapped(port)),
    }
