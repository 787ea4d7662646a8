"""Capture what a call prints on stderr, Python's and native code's alike. Imports the standard
library only.

MindSpore's expected first-call failure (`evidence.run_first_call`) prints
three things: numpy's "A module that was compiled using NumPy 1.x" message
with a stack (`sys.stderr`), the same error as MindSpore's C++ side prints
it, and a glog `[WARNING] ... Numpy init failed` line written straight to
file descriptor 2. The warm-up is expected to fail, so none of it belongs
on the user's terminal; it is kept instead (`stack.FIRST_CALL_STDERR`).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator

from ..native_stderr import captured_fd2


@contextlib.contextmanager
def captured_stderr(into: list[str]) -> Iterator[None]:
    """Within the block, stderr (`sys.stderr` and file descriptor 2) goes to a buffer; its
    text is appended to `into` when the block ends, however it ends."""
    python_side = io.StringIO()
    native: list[str] = []
    try:
        with captured_fd2(native), contextlib.redirect_stderr(python_side):
            yield
    finally:
        into.append(python_side.getvalue() + "".join(native))
