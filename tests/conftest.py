"""Test settings and the fixtures many test files share.

Strict JAX checks where JAX is installed (in the processes that run tests), the Hypothesis
profile, the canonical port, and Flax linen's own exercise (the source of expected values).
"""

import compileall
import contextlib
import functools
import gc
import importlib
import os
import re
from pathlib import Path

import pytest

from conformance.running import profiles
from implementations import manifests
from tests.support.helpers import port_or_skip

pytest_plugins = ["conformance.pytest_plugin"]

profiles.load()

# The stacks whose manifest says they must load first (MindSpore, then Paddle, before anything
# imports TensorFlow: in one process Paddle segfaults after TensorFlow, and MindSpore fails after
# Paddle), in their order, before anything else. A test session collects every folder in one
# process; the suite's ports each run in a worker of their own and need none of this.
# Only a session that collects those stacks' folders imports them: with MindSpore imported, a
# pytest process stopped by Ctrl-C ends killed by SIGTERM (-15), not with pytest's exit code 2
# (tests/core/running/test_interrupts.py runs such a session).
_HERE = Path(__file__).resolve().parent
#: The environment this session started with, before anything below could write to it.
ENVIRONMENT_AT_START = dict(os.environ)
_FIRST = sorted(
    (m for m in manifests.manifests() if m.load_first is not None), key=lambda m: m.load_first
)
_FIRST_FOLDERS = tuple(_HERE / m.tests for m in _FIRST if m.tests)


def _collects_first_stacks(args: list[str]) -> bool:
    roots = [Path(arg.split("::")[0]).resolve() for arg in args if not arg.startswith("-")]
    roots = roots or [Path.cwd()]
    # A root that is the folder, holds it, or lies in it (a test file named on its own).
    return any(
        root == folder or root in folder.parents or folder in root.parents
        for root in roots
        for folder in _FIRST_FOLDERS
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        help="run the full tier: the fast tier and the tests marked slow (docs/TESTING.md)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The fast tier leaves out the tests marked `slow`, unless `--full` or `-m` asks for them.

    As numpy's and SciPy's `slow` marks: a `-m` expression that names `slow` decides alone."""
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    for item in slow:
        if not item.get_closest_marker("slow").kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.slow needs reason=... (why)")
    if config.getoption("full") or "slow" in (config.getoption("markexpr") or ""):
        return
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


def pytest_configure(config: pytest.Config) -> None:
    # The test command runs two tests at once (-n 2) on the machine's cores, each often with
    # processes of its own: one OpenMP thread per process (unless the shell sets it), as the
    # suite's workers size their pools for the cores they share (`limit_threads`). Spinning
    # pools of two threads each in every process cost the test run CPU it has no room for.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if not hasattr(config, "workerinput"):  # once, in the process that starts the workers
        _compile_the_project()
    if _starts_xdist_workers(config):
        # The controller runs no test: the frameworks it would load here (MindSpore, Paddle,
        # JAX: seven CPU-seconds) only delay the workers' start.
        return
    # Until collection ends (`pytest_collection`): loading every framework made the cyclic
    # collector scan the growing heap again and again.
    gc.disable()
    _make_jax_strict()
    if not _collects_first_stacks(list(config.args)):
        return
    # Loading them writes this process's environment (MindSpore: pure-Python protobuf and its
    # LD_LIBRARY_PATH), which every process a test starts would inherit: runs unlike a user's
    # shell, and TensorFlow a CPU-second slower to load. Each process that loads them sets
    # them again for itself.
    with _environment_kept():
        _load_first_stacks()


#: Test modules and conftests: pytest compiles those itself, with its assert rewriting.
_REWRITTEN_BY_PYTEST = re.compile(r"[/\\](test_[^/\\]*|conftest)\.py$")


def _compile_the_project() -> None:
    """Byte-compile the project's own modules, once, before any test starts a process.

    The test run starts hundreds of Python processes (suite workers, CLI runs, probes), and
    each imports the project. With `PYTHONDONTWRITEBYTECODE` set (as on the machine this was
    measured on) or a checkout no import has written to yet, every one of them compiled the
    same sources again (importing the suite's runner took 0.55 CPU-s from source, 0.46 from
    bytecode). This does what `pip install` does for a package it copies, for the editable
    checkout; `compileall` skips what is up to date.
    """
    for package in ("conformance", "implementations", "tests"):
        compileall.compile_dir(_HERE.parent / package, quiet=1, rx=_REWRITTEN_BY_PYTEST)


@contextlib.contextmanager
def _environment_kept():
    """Undo, on the way out, what the block wrote to `os.environ`."""
    before = dict(os.environ)
    try:
        yield
    finally:
        for name in set(os.environ) - set(before):
            del os.environ[name]
        os.environ.update(before)


def _load_first_stacks() -> None:
    for manifest in _FIRST:
        # Through the stack's own loader where it has one (it refuses a bad order), else the
        # framework itself. Not installed (or blocked for a test): ImportError, and its folder
        # skips.
        with contextlib.suppress(ImportError):
            try:
                importlib.import_module(f"implementations.stacks.{manifest.stack}.loaded")
            except ModuleNotFoundError as error:
                if error.name != f"implementations.stacks.{manifest.stack}.loaded":
                    raise
                importlib.import_module(manifest.engine)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    """Once the tests are collected, the objects alive (every framework's modules, loaded for
    good) are frozen out of the cyclic collector's scans.

    A process that has loaded every stack holds millions of objects, and each full collection
    walked them all: a test that calls `gc.collect()` (the autograd and MLX memory
    instruments do, before each measurement) or simply allocates paid about 0.5 CPU-s per
    test in a worker (the 21 autograd schedule tests took 22 s, 13 s frozen), and collection
    itself took 19 s where 13 s with the collector off while the frameworks load."""
    try:
        return (yield)
    finally:
        gc.enable()
        gc.collect()
        gc.freeze()


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """The plugin's scheduler, with the modules whose tests start processes handed out after
    the ports' workers and before the rest: those are the long grains (a version sweep, a
    hostile run waiting out its timeouts), and xdist's own order (the most tests first) left
    them to the end, one xdist worker running them half idle while the other had finished."""
    if config.getoption("dist") != "loadscope":
        return None
    from conformance.pytest_plugin import port_scopes  # registered by now (pytest_plugins)

    return port_scopes(config, log, first=_starts_processes)


#: How a test module says that its tests start processes (`-m 'not subprocess'`): the mark
#: alone, or first in a list of marks (`pytestmark = [pytest.mark.subprocess, ...slow(...)]`).
_STARTS_PROCESSES = re.compile(r"^pytestmark = (?:\[\s*)?pytest\.mark\.subprocess\b", re.M)


@functools.cache
def _starts_processes(scope: str) -> bool:
    """Whether the test module `scope` (a path from the root) marks its tests `subprocess`."""
    module = _HERE.parent / scope
    return module.is_file() and bool(_STARTS_PROCESSES.search(module.read_text(encoding="utf-8")))


def _starts_xdist_workers(config: pytest.Config) -> bool:
    """This process is pytest-xdist's controller: it hands the tests to workers it starts."""
    return (
        not hasattr(config, "workerinput")
        and config.getoption("dist", "no") != "no"
        and bool(config.getoption("tx", None))
        and not config.getoption("collectonly")
    )


def _make_jax_strict() -> None:
    try:
        import jax
    except ImportError:  # not installed: the JAX ports' tests skip
        return
    # Implicit rank promotion hides shape bugs, e.g. a (1, F) output added
    # to an (F,) bias; make it an error in the ports' own code.
    jax.config.update("jax_numpy_rank_promotion", "raise")
    jax.config.update("jax_numpy_dtype_promotion", "strict")


@pytest.fixture(scope="session")
def canonical():
    """The canonical port (Flax linen), or a skip where Flax is not installed."""
    return port_or_skip("flax_linen")


@pytest.fixture(scope="session")
def linen_forward(canonical):
    """Flax linen's own `nn_checkpoint_forward`: the expected values, or a skip."""
    from implementations.stacks.jax.flax_linen import nn_checkpoint_forward

    return nn_checkpoint_forward
