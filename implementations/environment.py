"""The environment, read and set: `variable_set` (a variable set for one block, then put back)
and `positive_seconds` (a timeout a variable sets, checked). Imports the standard library only."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def variable_set(name: str, value: str) -> Iterator[None]:
    """`os.environ[name]` is `value` within the block, then what it was (unset if it was), so
    that processes started later choose for themselves; however the block ends."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            del os.environ[name]
        else:
            os.environ[name] = saved


def positive_seconds(variable: str) -> float | None:
    """The seconds the environment variable `variable` sets, or None where it is unset or
    blank; a `ValueError` naming `variable` for anything but a positive number."""
    setting = os.environ.get(variable, "").strip()
    if not setting:
        return None
    try:
        value = float(setting)
    except ValueError:
        value = 0.0
    if not value > 0:  # NaN too
        raise ValueError(f"{variable} must be a positive number of seconds, got {setting!r}")
    return value
