"""The compilation caches frameworks keep on disk, and turning them off mid-run.

Each stack declares its caches in its manifest (`implementations.manifests.CacheEntry`):
JAX's persistent compilation cache, inductor's. They live in the suite's cache
directory (`conformance.running.environment`). A damaged entry there (a
garbage `.py`, a truncated `.so`) fails a port's call with an error that
names the file, although the port did nothing wrong. `runner.run_property`
then asks `blamed(error)` which cache the error names, turns it off in this
process (`turn_off`) and runs the property once more: only a second failure
is the port's.
"""

from __future__ import annotations

import os
from pathlib import Path

from implementations import manifests
from implementations.manifests import CacheEntry

from . import process_state


def declared() -> dict[str, CacheEntry]:
    """Every stack's compilation caches, by name ("JAX", "inductor")."""
    return {cache.name: cache for m in manifests.manifests() for cache in m.caches}


def leading() -> CacheEntry:
    """The cache the others follow (JAX's): left unset, their switches follow its `off`."""
    caches = declared()
    (name,) = {cache.follows for cache in caches.values() if cache.follows}
    return caches[name]


def directories() -> dict[str, Path]:
    """Each framework cache in use in this process, by name."""
    found = {}
    for name, cache in declared().items():
        directory = os.environ.get(cache.directory_variable, "")
        if not directory and cache.default_directory:  # the framework's own default
            directory = manifests.resolve(cache.default_directory)()
        if directory:
            found[name] = Path(directory)
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


#: This process's caches turned off, each as the process-wide state (`process_state.capture`)
#: before and after: the suite's own change, which the worker does not lay at a port's door.
TURNED_OFF: list[tuple[dict, dict]] = []


def turn_off(name: str) -> None:
    """Stop this process's `name` cache from being read again (it is not written either)."""
    before = process_state.capture()
    manifests.resolve(declared()[name].turn_off)()
    TURNED_OFF.append((before, process_state.capture()))
