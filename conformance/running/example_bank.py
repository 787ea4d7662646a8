"""The example bank: each derandomized profile's cases, drawn once, and the canonical side of them.

Under the `ci` profile Hypothesis is derandomized: every port gets the same
examples for a property, in the same order, and they depend only on the
strategy (not on what the check does with them). Drawing them is about a
third of a port's time, and so is the canonical side (the canonical port's
results and the error analysis). So both are made once per machine and kept
in the cache directory, shared by every worker and every later run:

- `cases(prop, scope, n)`: the cases, drawn by Hypothesis with the same
  test function the checking run uses (`example`), so the same derandomized
  seed draws them: a failure found here is found again at the same place
  when Hypothesis reruns the property to shrink it;
- `references(prop, cases, canonical)`: `prop.prepare(canonical, case)` for
  each case: what the check compares the port with.

Each file's name is a hash of everything it depends on: the versions of
Hypothesis and numpy and the source of the strategies for the cases; the
canonical port's name and versions and the source of the properties, the
tolerance model and the precision tier for the references. Nothing stale is
ever read; delete the directory to reclaim the space.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import platform
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import given, settings

from implementations.contract import Implementation

from ..checking.properties import Property
from ..checking.strategies import describe
from . import environment

T = TypeVar("T")
_RECEIVERS: list[Callable[[Any], None]] = []


def example(case: Any) -> None:
    """The test function of every property run: it hands each case on.

    One function for drawing the bank and for checking, so that both get
    the same derandomized seed (Hypothesis derives it from the function).
    """
    _RECEIVERS[-1](case)


@contextlib.contextmanager
def sending_cases_to(function: Callable[[Any], None]) -> Iterator[None]:
    """Make `example` hand its cases to `function` for a while."""
    _RECEIVERS.append(function)
    try:
        yield
    finally:
        _RECEIVERS.pop()


def derandomized() -> bool:
    """Whether the active Hypothesis profile draws the same examples every run."""
    return settings().derandomize


def cases(prop: Property, scope: str, max_examples: int | None) -> list[Any]:
    """The property's cases under the active (derandomized) profile, drawn once and kept."""
    count = max_examples if max_examples is not None else settings().max_examples
    key = _digest(
        "cases",
        _versions("hypothesis", "numpy"),
        _sources("strategies", "properties"),
        prop.strategy.__name__,
        scope,
        count,
    )

    def draw() -> list[Any]:
        drawn: list[Any] = []
        with sending_cases_to(drawn.append):
            settings(max_examples=count, database=None)(given(prop.strategy(scope))(example))()
        return drawn

    return _kept(environment.cache_root() / "examples" / f"{key}.pickle", draw)


def references(
    prop: Property,
    case_list: list[Any],
    canonical: Callable[[], Implementation],
    make: Callable[[Property, Implementation | None, Any], Any],
    on_case: Callable[[str], None] | None = None,
    identity: Callable[[], tuple] | None = None,
) -> list[Any]:
    """`make(prop, canonical, case)` for every case, made once and kept.

    `canonical()` gives the canonical port (or raises); it is called only when
    the results must be made. `identity()` names the canonical port and its
    versions for the file's key; by default it is read off the loaded port.
    """
    key_of = identity or (lambda: canonical_identity(canonical()))
    identity_key = key_of() if prop.needs_canonical else ()
    key = _digest(
        "references",
        prop.key,
        _sources("properties", "tolerance", "checks", "precision"),
        identity_key,
        platform.machine(),
        os.environ.get("JAX_DEFAULT_MATMUL_PRECISION", ""),
        pickle.dumps(case_list),
    )

    def prepare() -> list[Any]:
        reference_port = canonical() if prop.needs_canonical else None
        made = []
        for case in case_list:
            if on_case is not None:
                on_case(describe(case))
            made.append(make(prop, reference_port, case))
        return made

    return _kept(environment.cache_root() / "references" / f"{key}.pickle", prepare)


def canonical_identity(port: Implementation) -> tuple:
    """What the canonical side of a case depends on, of the canonical port: its name, versions."""
    return (port.name, tuple(sorted(port.versions().items())))


def _kept(path: Path, make: Callable[[], T]) -> T:
    """The value pickled at `path`, or `make()`'s, written there first (once, under a lock)."""
    found = _read(path)
    if found is not None:
        return found[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.with_suffix(".lock")):
        found = _read(path)  # another worker may have made it meanwhile
        if found is not None:
            return found[0]
        value = make()
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as file:
            pickle.dump(value, file, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(file.name, path)  # readers see the whole file or none
    return value


def _read(path: Path) -> tuple[Any] | None:
    try:
        with open(path, "rb") as file:
            return (pickle.load(file),)
    except FileNotFoundError:
        return None
    except Exception:  # a truncated or foreign file: make it again
        return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # no flock (Windows): two workers may both make it; both are right
        yield
        return
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _digest(*parts: Any) -> str:
    encoded = (p if isinstance(p, bytes) else repr(p).encode() for p in parts)
    return hashlib.sha256(b"\0".join(encoded)).hexdigest()[:32]


def _versions(*distributions: str) -> tuple:
    from importlib.metadata import version

    return tuple(version(d) for d in distributions)


@functools.cache
def _sources(*modules: str) -> str:
    """A digest of the checking room's modules' source: a change to them makes new files."""
    digest = hashlib.sha256()
    for name in modules:
        digest.update((Path(__file__).parents[1] / "checking" / f"{name}.py").read_bytes())
    return digest.hexdigest()
