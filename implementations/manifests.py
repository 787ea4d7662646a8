"""Stack manifests: what the project knows about each framework, declared in its folder.

Each folder under `implementations/stacks/` that holds a framework has a
`manifest.py` defining `MANIFEST`, a `Manifest`. It imports no framework
(only this module), so reading every manifest is cheap: `list` reads them
and imports nothing else. Every table the suite keeps about frameworks (the
registry, extras, profiles, load order, compare's lanes, bench stacks,
mutants, policy expectations, device probes, compilation caches) is derived
from the manifests here, and the CI matrix is checked against them
(tests/core/docs/test_ci_workflow.py); adding a framework means adding a
folder.

A manifest names code by `"module:attribute"` strings, imported only when
that code is needed (`resolve`).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The package whose subpackages are the stacks.
STACKS = "implementations.stacks"
#: The profile that runs only ports declared in it (the sharded ones); every other profile
#: runs the ports that declare no profile.
SCALE = "scale"


@dataclass(frozen=True)
class PortEntry:
    """One port of a stack.

    **Arguments:**

    - `name`: its registry name.
    - `target`: `"module:Class"`, or `"exec:<command line>"` for a process port
      (docs/PROTOCOL.md; `{stack}` in the command is the stack's folder).
    - `extra`: the pip extra(s) that install its framework (`"keras,torch"` for two).
    - `modules`: the top-level modules it imports, found without importing them (`list`).
      A process port names none: its program is looked up on PATH.
    - `engine`: the array library it computes with (default: the stack's).
    - `lane`: compare's process for it (default: its engine); a port that
      holds process-wide state another port cannot share (Keras: one backend
      per process) names a lane of its own.
    - `profile`: `""` for every profile but `scale`; `"scale"` for a port that
      starts processes or devices of its own (ranks), run by that profile or when named.
    - `family`: whose policy expectations its instrument is held to
      (default: the stack's).
    - `ranks_variable`: for a sharded port, the variable that sets how many ranks or
      devices it runs on (`bench --scale` sweeps it).
    - `ranks_per_node`: that variable counts one node's ranks (torchrun's
      `--nproc-per-node`), not every node's together (`REMAT_SCALE_NODES`, docs/SCALE.md).
    """

    name: str
    target: str
    extra: str
    modules: tuple[str, ...] = ()
    engine: str = ""
    lane: str = ""
    profile: str = ""
    family: str = ""
    ranks_variable: str = ""
    ranks_per_node: bool = False


@dataclass(frozen=True)
class MutantEntry:
    """A deliberately broken port the suite must reject (`conformance.mutants`).

    - `target`: `"module:Class"`; `family`: the port whose worker hunts it
      (whose framework it needs); `first`: property ids tried before the usual order;
      `outside`: it stands for a port from another package, and is loaded as one (its code
      marks the process: `implementations.OUTSIDE_LOADED`).

    - `killed_by`: the letter of the property that must reject it, the one that looks at its
      bug (`"e"`); that property alone must (its module says the rule,
      `conformance/checking/properties/`). A stack declares it here, in its own folder; only
      the suite's own mutants are named in a property module's `MUTANTS`.
    """

    name: str
    target: str
    bug: str
    family: str
    first: tuple[str, ...] = ()
    outside: bool = False
    killed_by: str = ""

    def __post_init__(self):
        if not isinstance(self.killed_by, str) or not re.fullmatch(
            r"([a-z](_[a-z0-9_]+)?)?", self.killed_by
        ):
            raise TypeError(
                f"mutant {self.name}: killed_by must be a property's letter, got {self.killed_by!r}"
            )
        # An entry written when the property that kills it came fifth would pass its key here.
        if not isinstance(self.first, tuple) or not all(
            isinstance(p, str) and len(p) == 1 for p in self.first
        ):
            raise TypeError(
                f"mutant {self.name}: first must be a tuple of property letters, got "
                f"{self.first!r} (the property that kills a mutant is its killed_by)"
            )


@dataclass(frozen=True)
class BenchEntry:
    """A bench stack: L blocks on this framework (`conformance.benchmark`).

    - `module`: its module (see `implementations.bench_case` for what it offers).
    - `opt_in`: run only when named (`why`: the reason, for `bench --help`).
    - `isolated`: the module holds process-wide state (MindSpore's graph mode): the bench
      imports it in a process of its own and speaks to its cases there.
    - `quick`: part of `report --make bench`'s quick sweep (under a minute on two cores).
    - `schedules_opt_in`: why `bench --schedules` runs it only when named (empty: by default).
    - `notes`: what its instruments measure, by the bench's definition (`saved_bytes`,
      `temp_bytes`, `peak_bytes`, `matmuls`) and how it runs the mode `save-mm`: one clause
      each, which the bench's definitions gather (a stack without a figure says why not).
    """

    name: str
    module: str
    opt_in: bool = False
    why: str = ""
    isolated: bool = False
    quick: bool = False
    schedules_opt_in: str = ""
    notes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CacheEntry:
    """A compilation cache the framework keeps on disk, moved into the suite's cache folder.

    - `name`: as reports say it ("inductor"); `folder`: its folder in the suite's cache.
    - `setting`: the user's variable: a path, or `off`.
    - `directory_variable`: the framework's own variable for the directory.
    - `when_on`, `when_off`: variables set (unless already set) with the cache on or off.
    - `default_directory`: `"module:function"` giving the framework's directory where
      `directory_variable` is unset, imported without the framework (`""`: none).
    - `turn_off`: `"module:function"` that stops this process from reading it again.
    - `follows`: another cache's name whose `off` turns this one off too, unless `setting`
      is set (`""`: none).
    - `writes_when_off`: the framework writes into its directory even with its cache off
      (inductor: the code it generates); a folder of the run's scratch directory, removed
      when the run ends, takes that, not the framework's default.
    - `plain_paths`: the framework puts its directory and its temporary files on a tool's
      command line unquoted (inductor's g++): where either path holds a space or a quote,
      the suite gives it a plain one (`conformance.running.plain_paths`).
    """

    name: str
    folder: str
    setting: str
    directory_variable: str
    turn_off: str
    when_on: Mapping[str, str] = field(default_factory=dict)
    when_off: Mapping[str, str] = field(default_factory=dict)
    default_directory: str = ""
    follows: str = ""
    writes_when_off: bool = False
    plain_paths: bool = False


@dataclass(frozen=True)
class RowEntry:
    """An extra row of `compare` and `bench` for this stack that is not a suite port (a
    mode of the framework that is process-wide: MindSpore's graph mode).

    - `target`: `"module:Class"`, a port-like class measured in a process of its own.
    - `wanted_by`: port or stack names whose comparison includes it.
    """

    name: str
    target: str
    wanted_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class CiJob:
    """The hosted job of docs/ci/conformance-matrix.yml that runs this stack's ports (stacks
    naming one job share it); `pip_args`: what its install adds (an index of CPU wheels)."""

    name: str
    runner: str
    pip_args: str = ""


@dataclass(frozen=True)
class Manifest:
    """Everything the core knows of one framework, with no framework imported.

    **Arguments:**

    - `stack`: the folder's name.
    - `engine`: the array library its ports compute with (pictures group by it).
    - `ports`: its `PortEntry`s, in the order reports list them.
    - `distributions`: top-level module -> the distributions whose version stands for it,
      where they differ from the module's name (`{"paddle": ("paddlepaddle",)}`).
    - `load_first`: a rank for stacks that must be imported before every other in one
      process, lowest first (`None`: any order); `load_first_why` says why.
    - `environment`: variables set, unless set already, before any framework is imported
      (a matmul precision pin that the framework reads once).
    - `reads`: other variables that change what it computes, shown in reports.
    - `thread_variables`: variables that size its thread pools, set (unless set already) to
      the cores a worker may use; `one_thread`: variables set (likewise) when that is one.
    - `bench`, `mutants`, `rows`: its bench stacks, mutants and extra compare rows.
    - `expectations`: `"module:NAME"`, its instrument families' expected records per policy
      and its documented degradations (`implementations.expectations`), framework-free
      (default: `EXPECTATIONS` of the folder's `expectations` module, where every stack keeps it).
    - `devices`: `"module:function"`, its device probe, called only where `device_module`
      is imported already (`conformance.running.devices`).
    - `state`: `"module:function"`, its framework's process-wide settings as a dict of
      plain values (x64, the default matmul precision, the default dtype, ...), read where
      `device_module` (else `engine`) is imported already: a port that changes them is
      reported and the next port gets a fresh worker (`conformance.running.process_state`).
    - `process_variables`: variable -> why: environment variables the framework writes for
      itself in each process that uses it (an address in that process's memory). A change
      of one is the framework's bookkeeping, not a port's setting, and a worker starts
      without the parent's (in a child they would name the parent's memory).
    - `built_on`: frameworks (as ports name theirs) that compute with this engine.
    - `caches`: its compilation caches.
    - `ci`: its CI job; `tests`: its test folder under `tests/` (default: the stack's name).
    - `named_only`: distribution -> why the version sweep (`conformance.versions`) runs its
      versions other than the pin only when the user names them (torch: PyPI's Linux wheels
      are CUDA builds of several GB).
    - `build_requires`: what its sdist imports while it builds (DeepSpeed's setup.py imports
      torch): the version sweep installs them first and builds without build isolation, so
      that pip never fetches another torch into a build environment.
    """

    stack: str
    engine: str
    ports: tuple[PortEntry, ...] = ()
    distributions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    load_first: int | None = None
    load_first_why: str = ""
    environment: Mapping[str, str] = field(default_factory=dict)
    reads: tuple[str, ...] = ()
    thread_variables: tuple[str, ...] = ()
    one_thread: Mapping[str, str] = field(default_factory=dict)
    bench: tuple[BenchEntry, ...] = ()
    mutants: tuple[MutantEntry, ...] = ()
    rows: tuple[RowEntry, ...] = ()
    expectations: str = ""
    devices: str = ""
    device_module: str = ""
    state: str = ""
    process_variables: Mapping[str, str] = field(default_factory=dict)
    built_on: tuple[str, ...] = ()
    caches: tuple[CacheEntry, ...] = ()
    ci: CiJob | None = None
    tests: str = ""
    named_only: Mapping[str, str] = field(default_factory=dict)
    build_requires: tuple[str, ...] = ()

    def __post_init__(self):
        # Conventions every stack follows, written once here rather than in each manifest.
        if not self.expectations:
            object.__setattr__(
                self, "expectations", f"{STACKS}.{self.stack}.expectations:EXPECTATIONS"
            )
        if not self.tests:
            object.__setattr__(self, "tests", self.stack)

    def engine_of(self, port: PortEntry) -> str:
        return port.engine or self.engine

    def lane_of(self, port: PortEntry) -> str:
        return port.lane or self.engine_of(port)

    def family_of(self, port: PortEntry) -> str:
        return port.family or self.stack


@functools.cache
def manifests() -> tuple[Manifest, ...]:
    """Every stack's manifest, in folder order (the canonical port's stack first)."""
    package = importlib.import_module(STACKS)
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        try:
            module = importlib.import_module(f"{STACKS}.{info.name}.manifest")
        except ModuleNotFoundError as error:
            if error.name == f"{STACKS}.{info.name}.manifest":
                continue  # a folder of shared code, with no ports of its own
            raise
        manifest = module.MANIFEST
        if manifest.stack != info.name:
            raise ValueError(f"{module.__name__}: MANIFEST.stack is {manifest.stack!r}")
        found.append(manifest)
    found.sort(key=lambda m: not any(p.name == CANONICAL_PORT for p in m.ports))
    return tuple(found)


#: The canonical port's registry name (its stack is JAX's).
CANONICAL_PORT = "flax_linen"


@functools.cache
def process_variables() -> frozenset[str]:
    """Every stack's `process_variables`: what frameworks write in the environment for
    themselves."""
    return frozenset(name for m in manifests() for name in m.process_variables)


@functools.cache
def ports() -> dict[str, tuple[Manifest, PortEntry]]:
    """Every built-in port by name, with its stack's manifest, in registration order."""
    found: dict[str, tuple[Manifest, PortEntry]] = {}
    for manifest in manifests():
        for port in manifest.ports:
            if port.name in found:
                raise ValueError(f"port {port.name!r} is declared by two stacks")
            found[port.name] = (manifest, port)
    return found


def port(name: str) -> tuple[Manifest, PortEntry] | None:
    """A built-in port's manifest and entry (None for a port from elsewhere)."""
    return ports().get(name)


def stack(name: str) -> Manifest | None:
    """The manifest of the stack (folder) `name`."""
    return next((m for m in manifests() if m.stack == name), None)


def engine_of(name: str, framework: str = "") -> str:
    """The engine a port computes with: its manifest's, else the engine its `framework` is
    built on (a port from elsewhere), else the framework itself ("other" when unknown)."""
    entry = port(name)
    if entry is not None:
        return entry[0].engine_of(entry[1])
    for manifest in manifests():
        if framework == manifest.engine or framework in manifest.built_on:
            return manifest.engine
    return framework or "other"


def lane_of(name: str) -> str:
    """The process `compare` measures a port in: its manifest's lane (its engine, unless it
    holds process-wide state of its own), else its own name (a port from elsewhere)."""
    entry = port(name)
    return name if entry is None else entry[0].lane_of(entry[1])


def sharded() -> dict[str, str]:
    """The sharded ports (profile `scale`): name -> the variable setting their rank count."""
    return {
        name: entry.ranks_variable for name, (_, entry) in ports().items() if entry.profile == SCALE
    }


def rank_setting(name: str, ranks: int, nodes: int = 1) -> dict[str, str]:
    """The environment that runs the sharded port `name` on `ranks` ranks in all over
    `nodes` nodes of this machine (its rank variable, per node or in all, and
    `REMAT_SCALE_NODES`)."""
    entry = ports()[name][1]
    count = ranks // nodes if entry.ranks_per_node else ranks
    return {entry.ranks_variable: str(count), "REMAT_SCALE_NODES": str(nodes)}


def load_order(names: list[str], stack_of: Any) -> list[str]:
    """`names` with those whose stack (`stack_of(name)`, a Manifest or None) must load first
    moved ahead, by rank; the rest keep their order."""

    def rank(name: str) -> int | None:
        manifest = stack_of(name)
        return None if manifest is None else manifest.load_first

    first = sorted((n for n in names if rank(n) is not None), key=rank)
    return first + [n for n in names if rank(n) is None]


def resolve(target: str) -> Any:
    """The object a `"module:attribute"` string names, imported now."""
    module, _, attribute = target.partition(":")
    found = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        found = getattr(found, part)
    return found
