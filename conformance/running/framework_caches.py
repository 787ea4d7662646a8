"""The compilation caches a framework keeps on disk, and turning them off mid-run.

JAX's persistent compilation cache and inductor's caches live in the
suite's cache directory (`conformance.running.environment`). A damaged entry there
(a garbage `.py`, a truncated `.so`) fails a port's call with an error that
names the file, although the port did nothing wrong. `runner.run_property`
then asks `blamed(error)` which cache the error names, turns it off in this
process (`turn_off`) and runs the property once more: only a second failure
is the port's.
"""

from __future__ import annotations

import atexit
import getpass
import os
import shutil
import sys
import tempfile
from pathlib import Path


def directories() -> dict[str, Path]:
    """Each framework cache in use in this process, by name ("JAX", "inductor")."""
    found = {}
    jax_dir = os.environ.get("JAX_COMPILATION_CACHE_DIR", "")
    if jax_dir:
        found["JAX"] = Path(jax_dir)
    inductor_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    if not inductor_dir:  # inductor's own default
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = "unknown"
        inductor_dir = os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")
    found["inductor"] = Path(inductor_dir)
    return found


def blamed(error: BaseException) -> tuple[str, Path] | None:
    """The framework cache whose directory `error` (or an error it came from) names, if any."""
    texts = []
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        texts.append(str(error))
        texts.extend(str(note) for note in getattr(error, "__notes__", []))
        error = error.__cause__ or error.__context__
    text = "\n".join(texts)
    for name, directory in directories().items():
        variants = {str(directory), os.path.realpath(directory)}
        if any(variant and variant.rstrip(os.sep) + os.sep in text for variant in variants):
            return name, directory
    return None


def turn_off(name: str) -> None:
    """Stop this process's `name` cache from being read again (it is not written either)."""
    if name == "JAX" and "jax" in sys.modules:
        import jax
        from jax._src import compilation_cache

        jax.config.update("jax_enable_compilation_cache", False)
        compilation_cache.reset_cache()
        jax.clear_caches()
    elif name == "inductor":
        # A fresh directory, for the code inductor must write even with its caches off,
        # so that nothing already in the damaged one is imported again.
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
