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

The files are data, never code (`conformance.running.cache_files`: JSON and `.npy`,
checksummed); one that does not verify is made again. A cache that cannot
be read or written is run without, with one warning: never a verdict.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import os
import platform
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from hypothesis import given, settings

import implementations
from implementations import manifests
from implementations.contract import Implementation

from ..checking.properties import Property
from ..checking.strategies import describe
from . import cache_files, environment, locks

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

    path = environment.cache_root() / "examples" / f"{key}.entry"
    return list(_kept(path, draw, keep=not implementations.outside_code()))


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
    path = _references_path(prop, identity_key, case_list)

    def prepare() -> list[Any]:
        reference_port = canonical() if prop.needs_canonical else None
        made = []
        for case in case_list:
            if on_case is not None:
                on_case(describe(case))
            made.append(make(prop, reference_port, case))
        return made

    def waiting() -> None:
        if on_case is not None:
            on_case("its cases, being made by another worker")

    keep = not implementations.outside_code(but=identity_key[0] if identity_key else "")
    return _kept(path, prepare, waiting, keep=keep)


def kept_references(prop: Property, case_list: list[Any], identity: tuple) -> list[Any] | None:
    """The references `references` keeps for these cases, if it has them (None otherwise):
    read, never made (a process that ran outside code reads what a clean one made)."""
    path = _references_path(prop, identity if prop.needs_canonical else (), case_list)
    found = _read(path, path.stem)
    return None if found is None else _noted(found[0], path, read=True)


def _references_path(prop: Property, identity_key: tuple, case_list: list[Any]) -> Path:
    key = _digest(
        "references",
        prop.key,
        _sources("properties", "tolerance", "checks", "precision"),
        identity_key,
        platform.machine(),
        _pins(),
        cache_files.fingerprint(case_list),
    )
    return environment.cache_root() / "references" / f"{key}.entry"


class Kept(list):
    """An entry's values, and where they came from: `path`, and `read` (True: read from the
    cache, made by an earlier process; False: made now)."""

    path: Path
    read: bool


def agrees(fresh: Any, kept: Any) -> bool:
    """Whether a reference made now agrees with the one kept: the same structure, the same
    numbers (to a relative 1e-5 of each array's largest: the canonical's arithmetic under
    another thread count may round otherwise; a changed function is far off)."""
    if isinstance(fresh, np.ndarray) or isinstance(kept, np.ndarray):
        fresh, kept = np.asarray(fresh), np.asarray(kept)
        if fresh.shape != kept.shape or fresh.dtype != kept.dtype:
            return False
        if fresh.dtype.kind not in "fc":
            return bool(np.array_equal(fresh, kept))
        scale = float(np.max(np.abs(np.nan_to_num(kept)), initial=0.0))
        return bool(np.allclose(fresh, kept, rtol=1e-5, atol=1e-5 * scale, equal_nan=True))
    if dataclasses.is_dataclass(fresh) and not isinstance(fresh, type):
        return type(fresh) is type(kept) and all(
            agrees(getattr(fresh, f.name), getattr(kept, f.name)) for f in dataclasses.fields(fresh)
        )
    if isinstance(fresh, dict):
        return (
            isinstance(kept, dict)
            and fresh.keys() == kept.keys()
            and all(agrees(fresh[k], kept[k]) for k in fresh)
        )
    if isinstance(fresh, (list, tuple)):
        return (
            isinstance(kept, (list, tuple))
            and len(fresh) == len(kept)
            and all(agrees(a, b) for a, b in zip(fresh, kept, strict=True))
        )
    if isinstance(fresh, float) and isinstance(kept, float):
        return (
            fresh == kept
            or (fresh != fresh and kept != kept)
            or abs(fresh - kept) <= 1e-5 * abs(kept)
        )
    return bool(fresh == kept)


def drop(path: Path, why: str) -> None:
    """Remove a kept entry that is wrong, with one warning saying why (it is made again)."""
    environment.warn(f"cache entry {path} {why}: dropped, made again")
    with contextlib.suppress(OSError):
        path.unlink()


def canonical_identity(port: Implementation) -> tuple:
    """What the canonical side of a case depends on, of the canonical port: its name, its
    versions, and a digest of its code (`canonical_code`)."""
    return (port.name, tuple(sorted(port.versions().items())), canonical_code(port.name))


@functools.cache
def canonical_code(name: str) -> str:
    """A digest of the canonical port's code, read without importing it: every Python file
    beside its module (its stack's folder), or its module alone at the top level; for a
    process port, its command line."""
    target = implementations.registered().get(name, ("", ""))[0]
    digest = hashlib.sha256(target.encode())
    module = target.partition(":")[0]
    parts = module.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])  # a top-level name: nothing is imported
    except (ImportError, ValueError):
        spec = None
    files: list[Path] = []
    if spec is not None and spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*parts[1:-1])
        files = sorted(folder.glob("*.py"))
    elif spec is not None and spec.origin:
        files = [Path(spec.origin)]
    for file in files:
        with contextlib.suppress(OSError):
            digest.update(file.name.encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def _kept(
    path: Path, make: Callable[[], T], waiting: Callable[[], None] | None = None, keep: bool = True
) -> T:
    """The value kept at `path`, or `make()`'s, written there first (once, under a lock;
    `waiting()` is called every `locks.NOTE_SECONDS` while another process holds it, and a
    holder that is gone or stopped is given up on: `locks.held`). A list comes back as
    `Kept`, saying whether it was read. `keep=False` writes nothing: a process that ran a
    port from another package reads the cache, and never writes what it made.

    The cache is never a verdict: a file that does not verify is made again,
    and a cache that cannot be read or written is done without (one warning
    each); only `make()`'s own errors reach the caller.
    """
    key = path.stem
    found = _read(path, key)
    if found is not None:
        return _noted(found[0], path, read=True)
    if not keep:
        return _noted(make(), path, read=False)
    with contextlib.ExitStack() as stack:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(locks.held(path.with_name(f"{key}.lock"), waiting))
        except OSError as error:
            _unusable(path, "cannot be written", error)
            return _noted(make(), path, read=False)
        found = _read(path, key)  # another worker may have made it meanwhile
        if found is not None:
            return _noted(found[0], path, read=True)
        value = make()
        _write(path, key, value)
    return _noted(value, path, read=False)


def _noted(value: T, path: Path, *, read: bool) -> T:
    if not isinstance(value, list):
        return value
    kept = Kept(value)
    kept.path, kept.read = path, read
    return kept


def _read(path: Path, key: str) -> tuple[Any] | None:
    """`(value,)` from the entry at `path`, or None when there is none or it does not verify."""
    try:
        data = _contents(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        _unusable(path, "cannot be read", error)
        return None
    try:
        return (cache_files.load(data, key),)
    except cache_files.CacheFileError as error:
        environment.warn(f"cache entry {path} does not verify ({error}): made again")
        return None


def _contents(path: Path) -> bytearray:
    """The file's bytes, read once into a buffer the arrays can view (writable, as before)."""
    with open(path, "rb") as file:
        data = bytearray(os.fstat(file.fileno()).st_size)
        view, done = memoryview(data), 0
        while done < len(data):
            count = file.readinto(view[done:])
            if not count:  # shorter than it was: the checksum will say so
                break
            done += count
    return data


def _write(path: Path, key: str, value: Any) -> None:
    """Write the entry whole (readers see all of it or none), or warn and keep no file."""
    temporary = None
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as file:
            temporary = file.name
            cache_files.dump(file, key, value)
        os.replace(temporary, path)
        temporary = None
    except cache_files.CacheFileError as error:
        environment.warn(f"cannot keep {path.parent.name} in the cache: {error}")
    except OSError as error:
        _unusable(path, "cannot be written", error)
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _unusable(path: Path, what: str, error: OSError) -> None:
    environment.unusable(path, what, error)


def _digest(*parts: Any) -> str:
    encoded = (p if isinstance(p, bytes) else repr(p).encode() for p in parts)
    return hashlib.sha256(b"\0".join(encoded)).hexdigest()[:32]


def _pins() -> tuple:
    """The stacks' precision pins as this process has them (a user's own value wins over a
    manifest's, and changes what the canonical port computes)."""
    pinned = (v for manifest in manifests.manifests() for v in manifest.environment)
    return tuple((v, os.environ.get(v, "")) for v in pinned)


def _versions(*distributions: str) -> tuple:
    from importlib.metadata import version

    return tuple(version(d) for d in distributions)


@functools.cache
def _sources(*modules: str) -> str:
    """A digest of the checking room's modules' source: a change to them makes new files."""
    digest = hashlib.sha256()
    for name in modules:
        path = Path(__file__).parents[1] / "checking" / name
        # A package (the properties): every module in it.
        for file in sorted(path.glob("*.py")) if path.is_dir() else [path.with_suffix(".py")]:
            digest.update(file.read_bytes())
    return digest.hexdigest()
