"""Process settings for a suite run, applied before any framework is imported.

- **Matmul precision:** on a GPU, JAX may compute float32 matmuls with bf16
  passes and torch with TF32, which break the float32 error bounds. The
  environment pins JAX; each port also pins its own framework when it loads
  (`Implementation.pin_matmul_precision`). On the CPU nothing changes.
- **JAX's persistent compilation cache:** every new shape costs each JAX port
  about a second of XLA compiling. The cache keeps compiled code on disk, so
  a second run, and every worker process of a run, reuses it. Set
  `REMAT_JAX_CACHE=off` to turn it off, or to a directory to move it.
- **Inductor's caches** (`torch.compile`: generated C++, compiled, about a
  second a graph) live next to it, in `~/.cache/remat-conformance/torchinductor`
  rather than inductor's default, `/tmp/torchinductor_<user>`, which other
  torch programs share and a reboot may empty. `REMAT_TORCH_CACHE` moves
  them or (`off`) turns them off; left unset, `REMAT_JAX_CACHE=off` turns
  them off too, so "no compilation cache" means none for every framework.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "REMAT_JAX_CACHE"
TORCH_CACHE_ENV = "REMAT_TORCH_CACHE"
_OFF = ("off", "0", "no", "false")


def _cache_dir(variable: str, name: str) -> Path | None:
    setting = os.environ.get(variable, "")
    if setting.lower() in _OFF:
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "remat-conformance" / name


def jax_cache_dir() -> Path | None:
    """Where the JAX compilation cache lives, or None when it is turned off."""
    return _cache_dir(CACHE_ENV, "jax")


def torch_cache_dir() -> Path | None:
    """Where inductor's caches live, or None when they are turned off."""
    if TORCH_CACHE_ENV not in os.environ and jax_cache_dir() is None:
        return None
    return _cache_dir(TORCH_CACHE_ENV, "torchinductor")


def prepare() -> None:
    """Set the environment for JAX and torch before they are imported (the user's variables win)."""
    os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
    os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")
    cache = jax_cache_dir()
    if cache is not None:
        os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(cache))
        # Cache every compile: the suite's are many and each is short.
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
    torch_cache = torch_cache_dir()
    if torch_cache is None:
        os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")
    else:
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(torch_cache))
