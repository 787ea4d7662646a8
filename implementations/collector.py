"""Python's cyclic collector, paused while a framework loads.

Importing a framework allocates hundreds of thousands of objects that live as long as the
process, and the collector walks the growing heap again and again meanwhile. Measured on a
2-core machine, each import in a fresh process, collector on / off: TensorFlow 3.41 / 2.22
CPU-s, Keras 3.28 / 2.23, DeepSpeed 1.73 / 1.18, MindSpore 1.33 / 0.94, torch 1.09 / 0.88,
Paddle 0.90 / 0.73, JAX with Flax linen 0.66 / 0.48.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused(*, freeze: bool = False) -> Iterator[None]:
    """The collector off inside the block, and on again after if it was on.

    `freeze`: then collect once and move what is alive out of the collector's later scans
    (`gc.freeze`), for a process of the suite's own that keeps what it loaded to its end:
    each later full collection (the autograd and MLX instruments make one before each
    measurement) no longer walks every framework's objects. Not for a caller's process: what
    is frozen is never collected."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        if freeze:
            gc.collect()
            gc.freeze()
