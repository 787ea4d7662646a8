"""Ports' checks in a process the run can lose.

A suite is run on ports nobody trusts yet: one may segfault, hang, or print.
So ports are loaded in a worker process (`isolation.Child`: a fresh
interpreter), one per framework: the ports of one framework share it, each
loaded once, so the framework is imported once (`suite.worker_group`; a
Keras port joins its backend's, which is the only backend its process then
has). Before and after each port's work the worker reads the process-wide
state a port could change (`process_state`: the environment, the
frameworks' settings, their modules' functions); a port that changed it is
reported, and the parent gives the next port a fresh worker. The worker's
stdout and stderr go to the file of the port it is running, never to the
report's stream. It tells the parent what it is doing, message by message,
so that when it dies the parent can say which port, property, example and
call it died in.

The child side is `Session` (one loaded port and the requests run on it)
and `serve` (the worker's main loop, holding a session per port). The
parent side is `Worker`. Messages, child to parent:

- `("loaded", PortInfo)`: the port of the request loaded (or why not);
- `("begin", kind, key)`: a property or a mutant starts;
- `("example", text)`: an example starts (a short description);
- `("preparing", text)`: the canonical side of an example is being made;
- `("call", side, method)`: a contract method of the port or the canonical
  port is about to run;
- `("outcome", Outcome)`, `("mutant", MutantResult)`: one finished;
- `("state", text)`: the request's port changed process-wide state (what);
- `("idle",)`: the request is done;
- `("warning", text, key)`: a line about the cache (the parent says it, once per key);
- `("waiting", text)`: it waits for a lock in the cache, held by another process (whose);
  progress, as every message is: waiting on the cache never counts against a port;
- `("fatal", text)`: the run cannot go on (a full disk): the parent ends it (`RunError`).

Requests, parent to child: `("run", port, properties, mutants,
canonical_failure, output)` (`port` None: mutants only; `output`: the file
its prints go to) and `("stop",)`.

**Hangs, and slow compiles.** The parent stops a worker that makes no
progress for the timeout. The messages above are progress, but a first
compile (inductor's took minutes with two cold runs at once) sends none
while it runs. A heartbeat thread would not tell it from a hang: a port
asleep forever would send heartbeats too. So the parent also reads what
the worker's processes did (`processes.group_work`: CPU seconds and bytes
read, from the kernel, which the port cannot fake): a compile computes,
an import from a cold disk reads, and a hang that sleeps or waits does
neither, so it is still stopped at the timeout. A hang that computes (a
loop that never ends) is stopped at `RunConfig.compute_timeout`. That is
why the worker leads a process group of its own: what it starts (the
C++ compiler, inductor's compile workers) is counted with it, and is
stopped with it (`Worker.kill`), or when the parent dies
(`processes.watch_parent`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import implementations
from implementations import Implementation, PortUnavailable, collector

from ..checking import provenance
from ..checking.properties import BY_KEY
from . import (
    clean,
    devices,
    environment,
    example_bank,
    framework_caches,
    interrupts,
    isolation,
    locks,
    process_state,
    profiles,
    scratch,
)
from .mutation import MUTANT_EXAMPLES, run_mutants
from .runner import Outcome, run_property

Emit = Callable[[tuple], None]

# The methods whose calls are announced, so that a crash names one.
_ANNOUNCED = frozenset(
    {
        "init_params",
        "forward",
        "vjp",
        "backward_record",
        "exercise_record",
        "nn_checkpoint_forward",
        "to_numpy",
        "from_numpy",
        "remote_prepare",  # the canonical side, made in the clean process (`clean`)
        "remote_references",
    }
)


@dataclass(frozen=True)
class Settings:
    """What every worker of a run shares: the reference, the profile, the examples."""

    canonical: str = implementations.CANONICAL
    profile: str = profiles.DEFAULT
    max_examples: int | None = None
    scope: str = "menu"
    database: Path | None = None  # Hypothesis's example database
    reproduce: str = ""  # a Hypothesis blob: replay one example
    threads: int | None = None  # each worker's thread pools (None: the frameworks' own choice)
    timeout: float | None = None  # the run's --timeout: process ports wait no longer per answer
    shrink: bool = True  # shrink a failure to a minimal example (--no-shrink: report it as found)


@dataclass
class PortInfo:
    """A port as loaded: its state ("available", "unavailable" or "broken") and versions."""

    state: str
    reason: str = ""
    framework: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)  # its device, its precision


class Announced:
    """An implementation whose contract calls are announced first (`("call", side, name)`)."""

    def __init__(self, implementation: Implementation, side: str, emit: Emit):
        self._implementation, self._side, self._emit = implementation, side, emit

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._implementation, name)
        if name not in _ANNOUNCED:
            return value

        def announced(*args, **kwargs):
            self._emit(("call", self._side, name))
            return value(*args, **kwargs)

        return announced


class Session:
    """The child side: one loaded port, and the requests run on it. `info` says how it
    loaded; `shared` holds what the sessions of one worker share (the canonical port)."""

    def __init__(
        self, port_name: str | None, settings: Settings, emit: Emit, shared: dict | None = None
    ):
        self.settings, self.emit = settings, emit
        self.shared = {} if shared is None else shared
        self.port: Implementation | None = None
        self.info = PortInfo("available")
        if port_name is not None:  # None: a job of mutants only
            self.info = self._load(port_name)
        emit(("loaded", self.info))

    def _load(self, port_name: str) -> PortInfo:
        try:
            # What the port's framework loads is kept to the worker's end: frozen out of the
            # collector's scans (`implementations.collector`), it is not walked again at each
            # full collection (TensorFlow's port loaded and called: 4.2 -> 2.5 CPU-s).
            with interrupts.deferred(), collector.paused(freeze=True):
                port = implementations.load(port_name)
        except PortUnavailable as error:
            if fault := scratch.environment_fault():  # the import met the machine's fault
                raise scratch.RunFault(fault) from error
            return PortInfo("unavailable" if error.missing else "broken", error.reason)
        port.pin_matmul_precision()
        self.port = port
        # Read before the canonical port loads here: it would import JAX too.
        environment = devices.port_environment(port)
        environment["evidence"] = provenance.describe(port)  # who measures, whose expectations
        return PortInfo("available", "", port.framework, port.versions(), environment)

    def canonical(self) -> Implementation | clean.CleanCanonical | None:
        """The canonical port, loaded on first use (None when it cannot load); one per worker.
        Once this process has imported a port from another package, the canonical port of a
        clean process of its own (`clean`): no outside code makes the canonical side."""
        if implementations.outside_code(but=self.settings.canonical):
            if "clean" not in self.shared:
                try:
                    self.shared["clean"] = clean.CleanCanonical(
                        self.settings, self.shared.get("clean output")
                    )
                except PortUnavailable:
                    self.shared["clean"] = None
            return self.shared["clean"]
        if "canonical" not in self.shared:
            if self.port is not None and self.port.name == self.settings.canonical:
                self.shared["canonical"] = self.port
            else:
                try:
                    with interrupts.deferred(), collector.paused(freeze=True):
                        canonical = implementations.load(self.settings.canonical)
                    canonical.pin_matmul_precision()
                except PortUnavailable:
                    canonical = None
                self.shared["canonical"] = canonical
        return self.shared["canonical"]

    def _announced_canonical(self) -> Announced | None:
        return _announced(self.canonical(), "canonical", self.emit)

    def canonical_identity(self) -> tuple:
        """The canonical port's name and versions, without loading it where the registry can
        tell them (loading it imports its framework: about two seconds for JAX and Flax)."""
        versions = implementations.stack_versions(self.settings.canonical)
        if versions is None:
            canonical = self.canonical()
            if canonical is None:
                return (self.settings.canonical,)
            return example_bank.canonical_identity(canonical)
        code = example_bank.canonical_code(self.settings.canonical)
        return (self.settings.canonical, tuple(sorted(versions.items())), code)

    def run(
        self,
        properties: Iterable[str],
        mutants: Iterable[str],
        canonical_failure: str,
        mark: Callable[[str], None] | None = None,
    ):
        """Run the named properties on the port, then hunt the named mutants (`mark(name)` is
        called before each: what changes from there is that mutant's doing)."""
        for key in properties:
            self.emit(("begin", "property", key))
            self.emit(("outcome", self.check(key, canonical_failure)))
        for name in mutants:
            if mark is not None:
                mark(name)
            self.emit(("begin", "mutant", name))
            (result,) = run_mutants(
                lambda: None if canonical_failure else self._announced_canonical(),
                [name],
                max_examples=MUTANT_EXAMPLES,
                on_example=lambda text: self.emit(("example", text)),
                canonical_identity=self.canonical_identity,
            )
            self.emit(("mutant", result))

    def check(self, key: str, canonical_failure: str) -> Outcome:
        """One property on the port, against the canonical port."""
        prop, port, settings = BY_KEY[key], self.port, self.settings
        if port.name == settings.canonical and prop.needs_canonical and not prop.checks_canonical:
            message = "the canonical port is the reference"
            return Outcome(port.name, key, "reference", message=message)
        if prop.needs_canonical and canonical_failure:
            return Outcome(port.name, key, "skip", message=canonical_failure)
        return run_property(
            prop,
            Announced(port, "port", self.emit),
            self._announced_canonical,
            max_examples=settings.max_examples,
            scope=settings.scope,
            on_example=lambda text: self.emit(("example", text)),
            on_prepare=lambda text: self.emit(("preparing", text)),
            canonical_identity=self.canonical_identity,
            database=settings.database,
            reproduce=settings.reproduce,
            shrink=settings.shrink,
        )


def _announced(implementation: Implementation | None, side: str, emit: Emit):
    return None if implementation is None else Announced(implementation, side, emit)


def serve(settings: Settings) -> None:
    """A worker's main loop, in an isolated process (`isolation.Child`): run requests, each on
    its port (loaded on its first request, then kept), until told to stop."""
    connection = isolation.connection()
    environment.send_warnings_to(lambda text, key: connection.send(("warning", text, key)))
    locks.wait_notes_to(lambda text: connection.send(("waiting", text)))  # progress, not a hang
    if settings.threads is not None:
        environment.limit_threads(settings.threads)
    if settings.timeout is not None:  # implementations.process: no answer waited for longer
        os.environ["REMAT_SUITE_TIMEOUT"] = f"{settings.timeout:g}"
    environment.prepare()
    profiles.load(settings.profile)
    sessions: dict[str | None, Session] = {}
    shared: dict = {}  # the canonical port, loaded once for every session here
    while True:
        try:
            request = connection.recv()
        except EOFError:  # the parent went away
            return
        if request[0] == "stop":
            return
        _, port_name, properties, mutants, canonical_failure, output = request
        shared.setdefault("clean output", Path(output).with_name(f"clean-{os.getpid()}.out"))
        with printing_to(Path(output)):
            # Read before the port loads, once it has (what its import changed of what was
            # there), and after its work (what it changed since).
            before = process_state.capture()
            marks: list[tuple[str, dict, int]] = []  # where each mutant's work starts

            def mark(name: str, marks=marks) -> None:
                marks.append((name, process_state.capture(), len(framework_caches.TURNED_OFF)))

            try:
                session = sessions.get(port_name)
                if session is None:
                    session = Session(port_name, settings, connection.send, shared)
                    sessions[port_name] = session
                else:
                    connection.send(("loaded", session.info))
                loaded = process_state.capture()
                framework_caches.TURNED_OFF.clear()
                if session.port is not None or port_name is None:
                    session.run(properties, mutants, canonical_failure, mark)
            except scratch.DiskFull as full:  # the run's error: the parent ends the run
                connection.send(("fatal", scratch.full_disk_message(output, full.error)))
                return
            except scratch.RunFault as fault:  # likewise: a directory gone, a foreign replay
                connection.send(("fatal", str(fault)))
                return
            after = process_state.capture()
        # The port's load and properties, then each mutant's hunt: each change named for whom.
        turned, ends = framework_caches.TURNED_OFF, [*marks, (None, after, None)]
        first_end = ends[0]
        segments = [(port_name, before, loaded, turned[: first_end[2]], first_end[1])]
        for (name, start, count), (_, end, end_count) in itertools.pairwise(ends):
            segments.append((name, None, start, turned[count:end_count], end))
        for who, start, load_end, cache_pairs, end in segments:
            changed = _changed(start, load_end, cache_pairs, end)
            if changed and who is not None:  # no later request may meet it
                name = who if who == port_name else f"the mutant {who}"
                message = f"{name} changed process-wide state: {changed}"
                connection.send(("state", message, who if who == port_name else None))
        connection.send(("idle",))


def _changed(before: dict | None, loaded: dict, turned: list, after: dict) -> str:
    """What changed from `before` to `loaded` (the load) and from `loaded` to `after` (the
    work). A cache the suite turned off meanwhile (a failure in it, `turned`: the states
    around each) is the suite's change: only the stretches of work around it count."""
    marks = [loaded, *(state for pair in turned for state in pair), after]
    spans = [(before, loaded)] if before is not None else []
    spans += zip(marks[0::2], marks[1::2], strict=True)
    return "; ".join(found for a, b in spans if (found := process_state.changes(a, b)))


@contextlib.contextmanager
def printing_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr to `path` for a while, at the file-descriptor
    level: native prints and a fatal signal's stack (faulthandler writes to fd 2) go there too."""
    saved = [os.dup(1), os.dup(2)]
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        _flush()
        for stream in (1, 2):
            os.dup2(descriptor, stream)
        yield
    finally:
        _flush()
        for stream, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, stream)
            os.close(copy)
        os.close(descriptor)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


class Worker(isolation.Child):
    """The parent's handle on one worker process: an isolated `serve` (its own process
    group, its output in a file until its first request names one), and the message protocol
    above on its connection."""

    def __init__(self, settings: Settings, output: Path):
        env = process_state.worker_environment()
        super().__init__(f"{__name__}:serve", (settings,), output=output, env=env)

    @property
    def handles(self) -> tuple:
        """What `multiprocessing.connection.wait` can wait on."""
        return (self.connection,)

    def stop(self) -> None:
        """Ask the worker to finish, and make sure it does, with whatever it started."""
        self.send(("stop",))
        self.end(grace=10)


tail = isolation.tail  # the last lines of a worker's captured output
