"""The environment, read and set: `variable_set` (a variable set for one block, then put back),
`checked_setting` (a number a variable sets, checked) and `positive_seconds` (a timeout a
variable sets, checked). Imports the standard library only."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator


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


def checked_setting(
    variable: str, parse: Callable[[str], float], fits: Callable[[float], bool], wanted: str
) -> float | None:
    """The number the environment variable `variable` sets (`parse`d), or None where it is
    unset or blank; a `ValueError` naming `variable` and `wanted` where it does not parse or
    does not `fits`."""
    setting = os.environ.get(variable, "").strip()
    if not setting:
        return None
    try:
        value = parse(setting)
    except ValueError:
        value = None
    if value is None or not fits(value):
        raise ValueError(f"{variable} must be {wanted}, got {setting!r}")
    return value


def positive_seconds(variable: str) -> float | None:
    """The seconds the environment variable `variable` sets, or None where it is unset or
    blank; a `ValueError` naming `variable` for anything but a positive number."""
    # `value > 0` is False for NaN too.
    return checked_setting(variable, float, lambda value: value > 0, "a positive number of seconds")
