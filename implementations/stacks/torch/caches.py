"""inductor's on-disk caches: where they are by default, its precompiled headers kept in
its cache directory, and turning them off mid-run; and dynamo's limit on its own."""

from __future__ import annotations

import atexit
import getpass
import os
import shutil
import sys
import tempfile

#: Dynamo's recompiles, patched around the ports' own compiled calls: past `recompile_limit`
#: graphs of one code object dynamo runs the function eagerly without a word (the port no
#: longer compiled, and its eager checkpoint updates BatchNorm twice: tests/torch/
#: test_torch_stateful.py). 64, and reaching it is an error.
RECOMPILES = {"recompile_limit": 64, "fail_on_recompile_limit_hit": True}


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
        keep_headers_in_cache_directory()  # a damaged header is not read again either
        torch._dynamo.reset()


def keep_headers_in_cache_directory() -> None:
    """Keep inductor's precompiled C++ headers in `TORCHINDUCTOR_CACHE_DIR`, where it is set.

    inductor writes them to `/tmp/torchinductor_<user>/precompiled_headers` whatever that
    variable says (`_HEADER_DIR` in torch/_inductor/codecache.py, "global, rather than
    ignored by fresh_cache"): about 600 MB here, left outside the suite's cache folder after
    every first compile. Building them costs little: a cold run of torch_compile took 48 s
    building them, 51 s finding them built, and 66 s without them. Imports inductor's
    codecache.
    """
    directory = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not directory:
        return  # inductor's own default holds both
    from torch._inductor import codecache

    headers = os.path.join(directory, "precompiled_headers")
    codecache._HEADER_DIR = headers
    codecache._HEADER_LOCK_DIR = os.path.join(headers, "locks")
    codecache._precompile_header.cache_clear()  # paths made for the old directory
