"""Turning JAX's persistent compilation cache off in a running process (a damaged entry)."""

from __future__ import annotations

import sys


def turn_off() -> None:
    """Stop this process from reading JAX's compilation cache again (nor writing it)."""
    if "jax" not in sys.modules:
        return
    import jax
    from jax._src import compilation_cache

    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()
    jax.clear_caches()
