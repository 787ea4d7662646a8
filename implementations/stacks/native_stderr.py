"""`captured_fd2`: what native code writes to file descriptor 2 within a block, kept instead of
shown. Imports the standard library only.

C++ runtimes (TensorFlow's absl and oneDNN logs, MindSpore's glog) write straight to file
descriptor 2, past `sys.stderr`: only pointing the descriptor elsewhere catches them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def captured_fd2(into: list[str]) -> Iterator[None]:
    """Within the block, file descriptor 2 goes to a temporary file; its text is appended to
    `into` when the block ends, however it ends, and the descriptor is put back."""
    sys.stderr.flush()
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            into.append(sink.read().decode("utf-8", "replace"))
