"""The canonical port where no outside code runs: its own process, for a worker that loaded
a port from another package.

A port's module runs in the process that imports it. One that patches the canonical's
framework on import (`flax.linen.relu = leaky_relu`) would change the canonical side of
every example made in that process: the port would agree with the canonical it changed,
and, written to the shared example bank, the damage would fail the correct ports of later
runs. So a process that has imported a port from another package
(`implementations.outside_code`) never makes the canonical side itself: `CleanCanonical`
asks a process of its own (`serve`) that imports no port but the canonical, and the example
bank keeps nothing such a process made (`example_bank.references`).

The clean process stays in the worker's process group: its work counts as the worker's (a
long first compile is progress, not a hang), and it is stopped with the worker; it ends
itself when the worker dies (`processes.watch_parent`).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import implementations
from implementations import PortUnavailable, collector

from ..checking.properties import BY_KEY
from . import environment, example_bank, isolation, process_state, profiles
from .runner import prepare


class CleanCanonicalLost(RuntimeError):
    """The clean process died, or answered nothing (its error names how)."""


class CleanCanonical:
    """The canonical port in a clean process: its name and versions, and the canonical side
    of a property's example (`remote_prepare`). Raises `PortUnavailable` when it cannot load
    there."""

    def __init__(self, settings: Any, output: Path | None = None):
        # A folder of its own when the caller names no output: removed by `close`.
        self._made = None if output else Path(tempfile.mkdtemp(prefix="remat-clean-canonical-"))
        self.output = output or self._made / "output"
        self.child = isolation.Child(
            f"{__name__}:serve",
            (settings,),
            output=self.output,
            env=process_state.worker_environment(),
            own_group=False,
        )
        answer = self._answer("loading the canonical port")
        if answer[0] != "loaded":
            self.close()
            raise PortUnavailable(settings.canonical, answer[1], missing=answer[0] == "missing")
        _, self.name, versions = answer
        self._versions = dict(versions)

    def versions(self) -> dict[str, str]:
        return dict(self._versions)

    def remote_prepare(self, key: str, case: Any) -> Any:
        """`BY_KEY[key].prepare(canonical, case)`, made in the clean process."""
        self.child.send(("prepare", key, case))
        status, value = self._answer(f"making the canonical side of {key}")
        if status == "raised":
            raise RuntimeError(value)
        return value

    def remote_references(
        self, key: str, scope: str, max_examples: int | None, identity: tuple
    ) -> tuple[list, list]:
        """A property's cases and their references from the example bank, as the clean process
        reads them or makes and keeps them (it ran no outside code: what it makes is kept).
        The references come back as `example_bank.Kept`."""
        self.child.send(("references", key, scope, max_examples, identity))
        status, value = self._answer(f"making the canonical side of {key}")
        if status == "raised":
            raise RuntimeError(value)
        cases, references, read, path = value
        kept = example_bank.Kept(references)
        kept.read, kept.path = read, Path(path)
        return cases, kept

    def _answer(self, doing: str) -> tuple:
        try:
            return self.child.connection.recv()
        except (EOFError, OSError):
            raise CleanCanonicalLost(
                f"the canonical port's own process ({self.child.pid}) ended while {doing}: "
                f"{self.child.death()}\n{isolation.tail(self.output)}"
            ) from None

    def close(self) -> None:
        self.child.send(("stop",))
        self.child.end(grace=5)
        if self._made is not None:
            shutil.rmtree(self._made, ignore_errors=True)


def serve(settings: Any) -> None:
    """The clean process: the canonical port alone, answering `("prepare", key, case)` and
    `("references", key, scope, max_examples, identity)`."""
    connection = isolation.connection()
    environment.send_warnings_to(lambda text, key: None)  # the worker says the cache's
    if settings.threads is not None:
        environment.limit_threads(settings.threads)
    environment.prepare()
    profiles.load(settings.profile)
    try:
        with collector.paused(freeze=True):
            canonical = implementations.load(settings.canonical)
        canonical.pin_matmul_precision()
    except PortUnavailable as error:
        connection.send(("missing" if error.missing else "broken", error.reason))
        return
    connection.send(("loaded", canonical.name, tuple(sorted(canonical.versions().items()))))
    while True:
        try:
            request = connection.recv()
        except EOFError:  # the worker went away
            return
        if request[0] == "stop":
            return
        try:
            if request[0] == "references":
                _, key, scope, count, identity = request
                prop = BY_KEY[key]
                cases = example_bank.cases(prop, scope, count)
                made = example_bank.references(
                    prop, cases, lambda: canonical, prepare, identity=lambda i=identity: i
                )
                answer = ("made", (cases, list(made), made.read, str(made.path)))
            else:
                _, key, case = request
                answer = ("made", BY_KEY[key].prepare(canonical, case))
        except Exception as error:
            answer = ("raised", f"{type(error).__name__}: {error}")
        connection.send(answer)
