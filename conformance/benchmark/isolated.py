"""A bench stack in a process of its own, for a module that holds process-wide state
(MindSpore's graph mode): its manifest entry says `isolated`.

`IsolatedStack(module)` starts a fresh process (`running.isolation`) that
imports the module and serves its cases; the parent sees a module-like object
with the same surface (`implementations.bench_case`): `FRAMEWORK`,
`versions()`, `configurations()`, `build(...)` and, for the policy bench,
`POLICIES`, `NOT_EXPRESSIBLE`, `policy_case(...)`. Each case is a proxy whose
calls (`measure`, `step`, any other method) are requests to the child.
A module that cannot load there raises `ImportError` here, with the reason, so
the bench skips it as it skips a framework that is not installed.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import os
import tempfile
import weakref
from pathlib import Path
from typing import Any

from implementations import collector
from implementations.contract import StackUnavailable
from implementations.measuring import driver

from ..running import isolation

#: Seconds to wait for an answer: a deep stack compiles for a while on a shared machine.
TIMEOUT_SECONDS = 1800.0


class IsolatedStack:
    """A bench module imported in a child process: one request at a time."""

    def __init__(self, module: str):
        self.module = module
        handle, name = tempfile.mkstemp(prefix="remat-bench-isolated-", suffix=".out")
        os.close(handle)
        self.output = Path(name)
        self.child = isolation.Child(f"{__name__}:serve", (module,), output=self.output)
        kind, value = self._receive("hello")
        if kind == "unavailable":
            self.close()
            raise ImportError(value)
        self.FRAMEWORK = value["framework"]
        self.POLICIES = tuple(value["policies"])
        self.NOT_EXPRESSIBLE = dict(value["not_expressible"])
        self._versions, self._configurations = value["versions"], value["configurations"]
        atexit.register(self.close)

    def versions(self) -> dict[str, str]:
        return dict(self._versions)

    def configurations(self) -> list[tuple[str, str]]:
        return [tuple(pair) for pair in self._configurations]

    def build(self, variant: str, mode: str, data: Any) -> CaseProxy:
        return CaseProxy(self, self.call("build", variant, mode, data), variant, mode)

    def policy_case(self, policy: str, data: Any) -> CaseProxy:
        case, variant = self.call("policy_case", policy, data)
        return CaseProxy(self, case, variant, policy)

    def call(self, op: str, *arguments: Any) -> Any:
        if not self.child.alive:
            raise RuntimeError(f"{self.module}: its process is gone before {op!r}")
        self.child.send((op, arguments))
        kind, value = self._receive(op)
        if kind == "error":
            # A built-in error keeps its type (a bad mode is a ValueError here as in-process).
            name, message = value
            error = getattr(builtins, name, None)
            if not (isinstance(error, type) and issubclass(error, Exception)):
                error, message = RuntimeError, f"{name}: {message}"
            raise error(f"{self.module}: {op!r} failed in its process: {message}")
        return value

    def _receive(self, what: str) -> tuple[str, Any]:
        if not self.child.connection.poll(TIMEOUT_SECONDS):
            self.close()
            raise RuntimeError(f"{self.module}: no answer to {what!r} in time")
        try:
            return self.child.connection.recv()
        except (EOFError, OSError):
            last = isolation.tail(self.output, 3) or "no output"
            death = self.child.death()
            self.close()
            raise RuntimeError(
                f"{self.module}: its process ended ({death}) during {what!r}: {last}"
            ) from None

    def close(self) -> None:
        if self.child.alive:
            self.child.send(("stop", ()))
        self.child.end(grace=5)
        self.output.unlink(missing_ok=True)


class CaseProxy:
    """A case held by the child: `measure`, `step` and any other method are requests."""

    def __init__(self, stack: IsolatedStack, number: int, variant: str, mode: str):
        self.framework, self.variant, self.mode = stack.FRAMEWORK, variant, mode
        self._stack, self._number = stack, number
        # Freed in the child when the sweep lets go of the case (the child may be gone).
        weakref.finalize(self, _drop, stack, number).atexit = False

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):
            raise AttributeError(method)
        return lambda *arguments: self._stack.call("case", self._number, method, arguments)


def _drop(stack: IsolatedStack, number: int) -> None:
    with contextlib.suppress(Exception):  # freeing is best effort, never an error of its own
        stack.call("drop", number)


# ---------------------------------------------------------------------------
# In the child
# ---------------------------------------------------------------------------


def serve(module_name: str) -> None:
    """Import the module, say hello, then answer one request at a time until `stop`."""
    to_parent = isolation.connection()
    try:
        # As the bench's own process loads its stacks (`load_frameworks`).
        with collector.paused(freeze=True):
            module = driver.bench_module(module_name)
    except (ImportError, StackUnavailable) as error:  # not installed, or blocked here
        to_parent.send(("unavailable", f"{module_name} does not load: {error}"))
        return
    to_parent.send(
        (
            "hello",
            {
                "framework": module.FRAMEWORK,
                "versions": module.versions(),
                "configurations": module.configurations(),
                "policies": getattr(module, "POLICIES", ()),
                "not_expressible": getattr(module, "NOT_EXPRESSIBLE", {}),
            },
        )
    )
    cases: dict[int, Any] = {}
    while True:
        try:
            op, arguments = to_parent.recv()
        except EOFError:  # the parent went away
            return
        if op == "stop":
            return
        try:
            to_parent.send(("ok", _handle(module, op, arguments, cases)))
        except Exception as error:  # the parent raises it, naming the request
            to_parent.send(("error", (type(error).__name__, str(error))))


def _handle(module: Any, op: str, arguments: tuple, cases: dict[int, Any]) -> Any:
    if op in ("build", "policy_case"):
        case = getattr(module, op)(*arguments)
        number = max(cases, default=-1) + 1
        cases[number] = case
        return number if op == "build" else (number, case.variant)
    if op == "case":
        number, method, call_arguments = arguments
        return getattr(cases[number], method)(*call_arguments)
    if op == "drop":
        cases.pop(arguments[0], None)
        return None
    raise ValueError(f"unknown request {op!r}")
