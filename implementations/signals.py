"""`signal_name`: a signal's number in words, for the exit status of a process it ended.
Imports the standard library only."""

from __future__ import annotations

import contextlib
import signal


def signal_name(number: int) -> str:
    """`"SIGKILL"` for 9; `"signal 99"` for a number no signal of this platform has."""
    with contextlib.suppress(ValueError):
        return signal.Signals(number).name
    return f"signal {number}"
