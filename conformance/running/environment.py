"""Process settings for a suite run, applied before any framework is imported.

- **Matmul precision:** on a GPU, JAX may compute float32 matmuls with bf16
  passes, torch with TF32 and MLX with TF32, which break the float32 error
  bounds. The environment pins JAX, NVIDIA's libraries and MLX (which reads
  its switch once); each port also pins its own framework when it loads
  (`Implementation.pin_matmul_precision`). On the CPU nothing changes.
- **One cache directory** for everything the suite keeps between runs:
  `$REMAT_CACHE`, else `$XDG_CACHE_HOME/remat-conformance`, else
  `~/.cache/remat-conformance`. `REMAT_CACHE=off` keeps nothing (a fresh
  temporary directory per process).
  - `jax/`: JAX's persistent compilation cache. Every new shape costs each
    JAX port about a second of XLA compiling; the cache keeps compiled code,
    so a second run, and every worker process of a run, reuses it.
    `REMAT_JAX_CACHE=off` turns off this part alone, or names another place.
  - `torchinductor/`: inductor's caches (`torch.compile`: generated C++,
    compiled, about a second a graph), rather than inductor's default,
    `/tmp/torchinductor_<user>`, which other torch programs share and a
    reboot may empty. `REMAT_TORCH_CACHE` moves them or (`off`) turns them
    off; left unset, `REMAT_JAX_CACHE=off` turns them off too, so "no
    compilation cache" means none for every framework.
  - `hypothesis/`: Hypothesis's storage (its example database, which replays
    a failing example first on the next run, and its other files), so that
    nothing is written into the directory the suite is run from.
  - `examples/`, `references/`: the example bank (`conformance.running.example_bank`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

CACHE_ENV = "REMAT_JAX_CACHE"
ROOT_ENV = "REMAT_CACHE"
TORCH_CACHE_ENV = "REMAT_TORCH_CACHE"
_OFF = ("off", "0", "no", "false")


def cache_root() -> Path:
    """The directory the suite keeps things in between runs (see the module docstring)."""
    setting = os.environ.get(ROOT_ENV, "")
    if setting.lower() in _OFF:
        return Path(_scratch())
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "remat-conformance"


_SCRATCH: list[str] = []


def _scratch() -> str:
    # One temporary directory per process, made on first use, when caching is off.
    if not _SCRATCH:
        _SCRATCH.append(tempfile.mkdtemp(prefix="remat-conformance-"))
    return _SCRATCH[0]


def _cache_dir(variable: str, name: str) -> Path | None:
    setting = os.environ.get(variable, "")
    if setting.lower() in _OFF or os.environ.get(ROOT_ENV, "").lower() in _OFF:
        return None
    if setting:
        return Path(setting)
    return cache_root() / name


def jax_cache_dir() -> Path | None:
    """Where the JAX compilation cache lives, or None when it is turned off."""
    return _cache_dir(CACHE_ENV, "jax")


def torch_cache_dir() -> Path | None:
    """Where inductor's caches live, or None when they are turned off."""
    if TORCH_CACHE_ENV not in os.environ and jax_cache_dir() is None:
        return None
    return _cache_dir(TORCH_CACHE_ENV, "torchinductor")


def hypothesis_dir() -> Path:
    """Hypothesis's storage: its example database and the files it keeps."""
    return cache_root() / "hypothesis"


# The thread pools each framework sizes from these at import.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",  # torch's intra-op pool, OpenMP BLAS
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "REMAT_THREADS",  # the numpy init's own pool
)


def limit_threads(threads: int) -> None:
    """Size every framework's thread pools for `threads` threads (variables already set win).

    Called in a worker before any framework loads, with the cores the worker
    may use: the suite's matrices are small, and two processes with two
    threads each on two cores stall each other at every parallel barrier
    (torch's copies took 40 times longer so). XLA's Eigen pool is turned to
    one thread only when one is all there is.
    """
    for variable in THREAD_VARIABLES:
        os.environ.setdefault(variable, str(threads))
    if threads == 1 and "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false"


def prepare() -> None:
    """Set the environment before any framework is imported (variables the user set win)."""
    os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
    os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")
    os.environ.setdefault("MLX_ENABLE_TF32", "0")  # read once, at MLX's first matmul
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
    # Worker processes inherit the variable, so they all use the same storage.
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(hypothesis_dir()))
    from hypothesis import configuration

    configuration.set_hypothesis_home_dir(os.environ["HYPOTHESIS_STORAGE_DIRECTORY"])
