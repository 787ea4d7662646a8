"""inductor's on-disk caches: where they are by default, and turning them off mid-run."""

from __future__ import annotations

import atexit
import getpass
import os
import shutil
import sys
import tempfile


def default_directory() -> str:
    """inductor's own default, `/tmp/torchinductor_<user>` (read without importing torch)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")


def turn_off() -> None:
    """Stop this process from reading inductor's caches again (a damaged entry).

    A fresh directory takes the code inductor must write even with its caches off, so that
    nothing already in the damaged one is imported again.
    """
    fresh = tempfile.mkdtemp(prefix="remat-conformance-inductor-")
    atexit.register(shutil.rmtree, fresh, ignore_errors=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = fresh
    os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
    if "torch" in sys.modules:
        import torch._dynamo
        import torch._inductor.config
        from torch._inductor.codecache import PyCodeCache

        torch._inductor.config.force_disable_caches = True
        PyCodeCache.cache_clear()
        torch._dynamo.reset()
