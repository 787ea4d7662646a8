"""Process settings for a suite run, applied before any framework is imported.

- **Matmul precision:** on a GPU, frameworks may compute float32 matmuls with
  bf16 passes or TF32, which break the float32 error bounds. The environment
  pins NVIDIA's libraries, and each stack's manifest names the variables its
  framework reads once at import (`environment`); each port also pins its own
  framework when it loads (`Implementation.pin_matmul_precision`). On the CPU
  nothing changes.
- **One cache directory** for everything the suite keeps between runs:
  `$REMAT_CACHE`, else `$XDG_CACHE_HOME/remat-conformance` (when absolute:
  the XDG spec says to ignore a relative one), else `~/.cache/remat-conformance`.
  `REMAT_CACHE=off` keeps nothing: one temporary directory for the run,
  shared with its workers and removed when the process that made it exits.
  A part of the cache that cannot be used (unwritable, not a directory) is
  done without, with one warning line; it never decides a verdict.
  - `jax/`: JAX's persistent compilation cache. Every new shape costs each
    JAX port about a second of XLA compiling; the cache keeps compiled code,
    so a second run, and every worker process of a run, reuses it.
    `REMAT_JAX_CACHE=off` turns off this part alone, or names another place.
  - every other framework's compilation cache its manifest declares
    (`CacheEntry`), in a folder of its own, rather than the framework's
    default, which other programs share and a reboot may empty: each has a
    variable that moves it or (`off`) turns it off; left unset, it follows
    `REMAT_JAX_CACHE=off`, so "no compilation cache" means none for every
    framework.
  - `hypothesis/`: Hypothesis's storage (its example database, which replays
    a failing example first on the next run, and its other files), so that
    nothing is written into the directory the suite is run from.
  - `examples/`, `references/`: the example bank (`conformance.running.example_bank`).
  - `numpy-init/`: the numpy init's 16 MiB lookup table, built in a second or
    two and otherwise rebuilt by every worker that inits without JAX; kept
    with the compiled code (off when the JAX cache is).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

from implementations import manifests
from implementations.contract import PortWarning
from implementations.manifests import CacheEntry

from . import framework_caches, plain_paths

ROOT_ENV = "REMAT_CACHE"
_OFF = ("off", "0", "no", "false")
# The run's temporary cache when REMAT_CACHE=off, handed from the parent to its workers.
SCRATCH_ENV = "REMAT_SCRATCH_CACHE"
# Read by the numpy init (implementations.stacks.numpy.init), which imports nothing of the suite.
INIT_TABLES_ENV = "REMAT_INIT_TABLES"

_WARNED: set[str] = set()
_WARNING_SINKS: list[Callable[[str, str], None]] = []


def warn(text: str, once: str | None = None) -> None:
    """Say one line about the cache (or a port's setup: `PortWarning`), once per process for
    each `once` key (default: the text).

    It goes to stderr, or to the sink a worker installs (its parent says it).
    """
    key = text if once is None else once
    if key in _WARNED:
        return
    _WARNED.add(key)
    if _WARNING_SINKS:
        _WARNING_SINKS[-1](text, key)
    else:
        print(f"remat-conformance: warning: {text}", file=sys.stderr, flush=True)


def _say(text: str) -> None:
    if text:
        warn(text)


def send_warnings_to(sink: Callable[[str, str], None]) -> None:
    """Hand this process's warnings, `(text, key)`, to `sink` (a worker's go to its parent)."""
    _WARNING_SINKS.append(sink)


def unusable(path: Path, what: str, error: OSError) -> None:
    """Warn that the cache at `path` `what` (cannot be read, written): one line per cache root.

    The line stands for every cache under the root, so where the root itself cannot be
    written (a read-only mount), it names the root, not the first folder found so."""
    root = cache_root()
    under_root = root == path or root in path.parents
    key = f"cache {root}" if under_root else f"cache {path}"
    if under_root and path != root and key not in _WARNED and (found := usable(root)):
        path, what, error = root, "cannot be written", found
    reason = error.strerror or type(error).__name__
    warn(f"the cache at {path} {what} ({reason}): the run goes on without it", once=key)


def cache_root() -> Path:
    """The directory the suite keeps things in between runs (see the module docstring)."""
    setting = os.environ.get(ROOT_ENV, "")
    if setting.lower() in _OFF:
        return Path(_scratch())
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, empty or relative: the spec says ignore it
        base = Path.home() / ".cache"
    return Path(base) / "remat-conformance"


_SCRATCH: list[str] = []


def _scratch() -> str:
    """The run's temporary cache: the parent's, inherited, or made here (and removed at exit)."""
    if not _SCRATCH:
        inherited = os.environ.get(SCRATCH_ENV, "")
        if inherited and os.path.isdir(inherited):
            _SCRATCH.append(inherited)  # the process that made it removes it
        else:
            made = tempfile.mkdtemp(prefix="remat-conformance-")
            _SCRATCH.append(made)
            os.environ[SCRATCH_ENV] = made  # workers spawned from here share it
            atexit.register(_remove_scratch, made)
    return _SCRATCH[0]


def _remove_scratch(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if os.environ.get(SCRATCH_ENV) == path:
        del os.environ[SCRATCH_ENV]
    if path in _SCRATCH:
        _SCRATCH.clear()


def usable(directory: Path) -> OSError | None:
    """None if files can be made in `directory` (made if missing), else why not."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-"):
            pass
    except OSError as error:
        return error
    return None


def _cache_dir(variable: str, name: str) -> Path | None:
    setting = os.environ.get(variable, "")
    if setting.lower() in _OFF or os.environ.get(ROOT_ENV, "").lower() in _OFF:
        return None
    if setting:
        return Path(setting)
    return cache_root() / name


def _usable_or_warn(directory: Path | None, what: str) -> Path | None:
    """`directory`, or None (with one warning) when it cannot be written."""
    if directory is None:
        return None
    error = usable(directory)
    if error is None:
        return directory
    unusable(directory, f"({what}) cannot be written", error)
    return None


def leading_cache_dir() -> Path | None:
    """Where the compilation cache that the others follow lives, or None when it is turned
    off. Its folder is the one its stack's manifest declares."""
    return cache_dir(framework_caches.leading())


def cache_dir(cache: CacheEntry) -> Path | None:
    """Where a framework's compilation cache (its manifest's `CacheEntry`) lives, or None when
    it is turned off: by its own setting, or, left unset, with the cache it follows."""
    followed = framework_caches.declared().get(cache.follows)
    if followed is not None and cache.setting not in os.environ and cache_dir(followed) is None:
        return None
    return _cache_dir(cache.setting, cache.folder)


def init_tables_dir() -> Path | None:
    """Where the numpy init keeps its 16 MiB lookup table (`implementations.stacks.numpy.init`),
    or None when the JAX cache (and so the suite's cache of compiled work) is off."""
    if leading_cache_dir() is None:
        return None
    return cache_root() / "numpy-init"


def hypothesis_dir() -> Path:
    """Hypothesis's storage: its example database and the files it keeps."""
    return cache_root() / "hypothesis"


# The thread pools sized from these at import; each stack's manifest adds its own.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",  # OpenMP pools: intra-op threads, OpenMP BLAS
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "REMAT_THREADS",  # the numpy init's own pool
)


def limit_threads(threads: int) -> None:
    """Size every framework's thread pools for `threads` threads (variables already set win).

    Called in a worker before any framework loads, with the cores the worker
    may use: the suite's matrices are small, and two processes with two
    threads each on two cores stall each other at every parallel barrier
    (torch's copies took 40 times longer so). A stack's `one_thread` settings
    (XLA's Eigen pool off) apply only when one thread is all there is.
    """
    stacks = manifests.manifests()
    for variable in (*THREAD_VARIABLES, *(v for m in stacks for v in m.thread_variables)):
        os.environ.setdefault(variable, str(threads))
    if threads == 1:
        for manifest in stacks:
            for variable, value in manifest.one_thread.items():
                os.environ.setdefault(variable, value)


def _say_port_warnings() -> None:
    """Say a port's `PortWarning` as the cache's warnings are said: once, on the run's stderr
    (a worker's through its parent), not in the port's captured output, unread."""
    shown = warnings.showwarning
    if getattr(shown, "says_port_warnings", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, PortWarning):
            warn(str(message))
        else:
            shown(message, category, filename, lineno, file, line)

    show.says_port_warnings = True
    warnings.showwarning = show


def prepare() -> None:
    """Set the environment before any framework is imported (variables the user set win)."""
    _say_port_warnings()
    # NVIDIA's libraries (cuBLAS, cuDNN) under every framework: no TF32 for float32.
    os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")
    for manifest in manifests.manifests():  # the stacks' own pins, read once at import
        for variable, value in manifest.environment.items():
            os.environ.setdefault(variable, value)
    caches = framework_caches.declared().values()
    if any(cache.plain_paths for cache in caches):  # its tools take its temporary files too
        _say(plain_paths.plain_temporary_directory())
    for cache in caches:
        directory = _usable_or_warn(cache_dir(cache), f"{cache.name}'s compilation")
        settings = cache.when_off if directory is None else cache.when_on
        if directory is None and cache.writes_when_off:
            directory = Path(_scratch()) / cache.folder
        unset = cache.directory_variable not in os.environ  # a user's own setting wins
        if directory is not None and cache.plain_paths and unset:
            directory, said = plain_paths.stand_in(directory, f"{cache.name}'s compilation cache")
            _say(said)
        if directory is not None:
            os.environ.setdefault(cache.directory_variable, str(directory))
        for variable, value in settings.items():
            os.environ.setdefault(variable, value)
    tables = _usable_or_warn(init_tables_dir(), "the numpy init's tables")
    if tables is not None:
        os.environ.setdefault(INIT_TABLES_ENV, str(tables))
    # Worker processes inherit the variable, so they all use the same storage.
    if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
        storage = _usable_or_warn(hypothesis_dir(), "Hypothesis's")
        storage = storage or Path(_scratch()) / "hypothesis"  # it must write somewhere
        os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(storage)
    from hypothesis import configuration

    configuration.set_hypothesis_home_dir(os.environ["HYPOTHESIS_STORAGE_DIRECTORY"])
