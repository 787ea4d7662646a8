"""SIGINT, SIGTERM and SIGHUP as a clean stop, not a traceback.

The CLI installs `handled()` around a command. The first SIGINT, SIGTERM or
SIGHUP (a closed terminal, a dropped ssh session) raises `Interrupted` where
the main thread is (the suite's supervisor catches it, stops its workers and
reports what finished); later ones are ignored, so that the cleanup itself is
never cut short. After `stop_raising()` (once the work is done and its report
is being written) even the first one is only noted, so stdout never holds
half a JSON document. The command then exits with `exit_code()`: 128 + the
signal's number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), as a shell
reports a process the signal killed.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """The run was told to stop (a BaseException: no `except Exception` swallows it)."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_state: dict = {"received": None, "raising": True}


def _on_signal(signum: int, frame) -> None:
    if _state["received"] is not None:
        return  # already stopping
    _state["received"] = signum
    if _state["raising"]:
        raise Interrupted(signum)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise `Interrupted` in this block (main thread only; else
    a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.update(received=None, raising=True)
    previous = {number: signal.signal(number, _on_signal) for number in SIGNALS}
    hook = sys.unraisablehook
    sys.unraisablehook = _quiet_about_interrupts(hook)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for number, handler in previous.items():
            signal.signal(number, handler)
        # A signal this block took is answered: later code in the process (a test session's
        # next in-process run or bench) must not read it as its own.
        _state.update(received=None, raising=True)


def _quiet_about_interrupts(hook):
    """An unraisable-exception hook that drops `Interrupted`.

    A signal that lands in a callback Python cannot raise from (JAX's garbage
    collection callback, a `__del__`) would print "Exception ignored ...
    Traceback"; the signal is noted all the same, and `check()` raises it at
    the next step, so the message is only noise.
    """

    def quiet(unraisable) -> None:
        if not isinstance(unraisable.exc_value, Interrupted):
            hook(unraisable)

    return quiet


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal in this block is noted, and raised as it ends: for loading a framework. An
    exception raised inside a native extension's initialisation does not unwind (a Ctrl-C
    during one ended the bench with SIGABRT or SIGSEGV, not 130)."""
    raising = _state["raising"]
    _state["raising"] = False
    try:
        yield
    finally:
        _state["raising"] = raising
    check()


def stop_raising() -> None:
    """From now until `handled()` ends, a signal is noted, not raised (see `exit_code`)."""
    _state["raising"] = False


def check() -> None:
    """Raise `Interrupted` again if a signal came and its exception was swallowed (an import
    of a native extension can turn it into an ImportError); for loops to call between steps."""
    if _state["received"] is not None and _state["raising"]:
        raise Interrupted(_state["received"])


def received() -> int | None:
    """The signal that interrupted this command, if one did."""
    return _state["received"]


def exit_code(otherwise: int) -> int:
    """128 + the signal's number if one was received, else `otherwise`."""
    signum = received()
    return otherwise if signum is None else 128 + signum
