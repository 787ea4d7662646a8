"""Process settings for a suite run, applied before any framework is imported.

- **Matmul precision:** on a GPU, JAX may compute float32 matmuls with bf16
  passes and torch with TF32, which break the float32 error bounds. The
  environment pins JAX; each port also pins its own framework when it loads
  (`Implementation.pin_matmul_precision`). On the CPU nothing changes.
- **JAX's persistent compilation cache:** every new shape costs each JAX port
  about a second of XLA compiling. The cache keeps compiled code on disk, so
  a second run, and every worker process of a run, reuses it. Set
  `REMAT_JAX_CACHE=off` to turn it off, or to a directory to move it.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "REMAT_JAX_CACHE"


def jax_cache_dir() -> Path | None:
    """Where the JAX compilation cache lives, or None when it is turned off."""
    setting = os.environ.get(CACHE_ENV, "")
    if setting.lower() in ("off", "0", "no", "false"):
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "remat-conformance" / "jax"


def prepare() -> None:
    """Set the environment for JAX before it is imported (variables the user set win)."""
    os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
    os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")
    cache = jax_cache_dir()
    if cache is not None:
        os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(cache))
        # Cache every compile: the suite's are many and each is short.
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
