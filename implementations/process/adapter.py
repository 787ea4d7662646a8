"""`ProcessPort`: a port in any language, as an `Implementation` (docs/PROTOCOL.md).

The port is a program that reads JSON requests on stdin and answers on
stdout. This adapter starts it, converts the contract's numpy values to the
wire and back, and contains what a foreign program can do wrong: a crash
(its process ends before it answers), a hang (no answer in time), noise on
stdout (copied to stderr), a flood (a line, or a request's output, past its limit:
`MAX_LINE`, `MAX_REQUEST`), and a protocol violation (an answer that breaks
the protocol). Each is an exception that names the request and carries the
port's last stderr lines; the next call starts a fresh process. The child
stays in this process's group, so a suite worker that is stopped takes it
along. Under the suite, no request waits longer than the suite's `--timeout`
(`REMAT_SUITE_TIMEOUT`, set by its worker): a port that loops for ever is
stopped here, where the worker's own watch would take a computing process
for a compile. A stderr line that starts with `WARNING_PREFIX` is a
`PortWarning` for the user, raised here once its request is answered.

Versions are negotiated in `hello`: the adapter offers every version it
speaks (`PROTOCOL_VERSIONS`) and the port answers the one it speaks; a
port written for protocol 1 that refuses version 2 is asked again in 1.
Protocol 2 carries a remat policy by name (`policy`) beside `checkpoint`;
protocol 3 carries a composition case (`nesting`: the region wrapped twice,
or under a trainer's), which a port declares in its `hello`.

What crosses the wire is the port's word: evidence records are stamped
measured by the port (`contract.MEASURED_BY_PORT`), and the expectations a
`hello` declares are the port's own (`instrument_family`, `expectations`).
Imports numpy and the standard library.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import json
import math
import numbers
import os
import queue
import shlex
import shutil
import subprocess
import sys
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from .. import composition
from ..contract import (
    MAX_ELEMENTS,
    NOT_REPORTED,
    BackwardRecord,
    Grads,
    Implementation,
    Params,
    PortWarning,
    SizeLimitError,
    dtype_category,
    max_bytes,
)
from ..environment import positive_seconds
from ..expectations import from_wire
from ..policies import FULL, POLICY_NAMES, Policy, check_declaration, declared_policy
from ..signals import signal_name
from ..stateful import DEFAULT_VARIANT, StateStep
from ..stateful_port import checked
from .wire import (
    PROTOCOL_VERSION,
    PROTOCOL_VERSIONS,
    ProtocolViolation,
    decode_array,
    decode_record,
    encode_array,
    field,
)

#: What a process port expresses when its `hello` declares no policies: the wire's boolean.
#: What every `hello` answer holds (docs/PROTOCOL.md, *Requests and responses*); the rest of
#: what the adapter reads from it is optional.
HELLO_FIELDS = ("name", "framework", "versions", "protocol")
WIRE_POLICIES = {"none": "checkpoint: false", "full": "checkpoint: true"}
#: Why a policy other than none and full is out of reach, by protocol version.
_CANNOT = {
    1: "protocol 1 carries checkpoint on/off only",
    2: "not declared in the port's hello",
}

#: Seconds to wait for one answer, unless `REMAT_PROCESS_TIMEOUT` says otherwise.
DEFAULT_TIMEOUT = 120.0
#: Seconds a port may take to start in all, however much it logs (`_Child.await_answer`).
START_LIMIT = 900.0
_STDERR_LINES = 20
#: What a port may write (docs/PROTOCOL.md, "What the adapter does with a misbehaving port"),
#: each set in bytes by its variable: the longest line, the most bytes (stdout and stderr)
#: from one request to the next, and how much of its noise and stderr is kept in the
#: captured output. A port past one of the first two is killed: a `ProtocolViolation`.
MAX_LINE = ("REMAT_PROCESS_MAX_LINE", 64 << 20)
MAX_REQUEST = ("REMAT_PROCESS_MAX_REQUEST", 256 << 20)
MAX_CAPTURED = ("REMAT_PROCESS_MAX_CAPTURED", 4 << 20)
#: A kept stderr line (for a fault's message) is cut to this many characters.
_TAIL_LINE = 2000
#: A port's stderr line for the user, not for a fault's message: a `PortWarning`.
WARNING_PREFIX = "remat-conformance: warning: "

# The error types a port may answer with, as the Python exceptions they become.
_ERRORS: dict[str, type[Exception]] = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "SizeLimitError": SizeLimitError,
}


class ProcessPortError(RuntimeError):
    """A process port that failed as a program (not as a port): it crashed, hung or erred."""


class ProcessPortCrashed(ProcessPortError):
    """The port's process ended before it answered: the suite reports it as crashed."""

    suite_status = "crashed"


class ProcessPortTimeout(ProcessPortError):
    """The port's process did not answer in time; it was killed: the suite reports a timeout."""

    suite_status = "timeout"


class ProcessPortUnavailable(ProcessPortError):
    """The port cannot run here: its program is missing, or it said so in `hello`."""


def expand_command(command: str) -> list[str]:
    """An `exec:` entry point's command line as argv, `{implementations}` expanded."""
    here = str(Path(__file__).resolve().parent.parent)
    argv = [word.replace("{implementations}", here) for word in shlex.split(command)]
    if not argv:
        raise ValueError("the command is empty")
    return argv


def _timeout() -> float:
    """Seconds to wait for `hello`: `REMAT_PROCESS_TIMEOUT`, else 120 (a first start may
    install the port's runtime)."""
    return positive_seconds("REMAT_PROCESS_TIMEOUT") or DEFAULT_TIMEOUT


def _bytes(limit: tuple[str, int]) -> int:
    """A limit in bytes: its variable (a positive integer), else its default."""
    variable, default = limit
    setting = os.environ.get(variable, "")
    if not setting:
        return default
    if not setting.isdigit() or int(setting) <= 0:
        raise ValueError(f"{variable}={setting!r}: expected a positive number of bytes")
    return int(setting)


def _request_timeout(timeout: float) -> float:
    """Seconds to wait for any other answer: `timeout`, at most the suite's `--timeout`
    (`REMAT_SUITE_TIMEOUT`, which the suite's worker sets)."""
    suite = positive_seconds("REMAT_SUITE_TIMEOUT")
    return timeout if suite is None else min(timeout, suite)


_running: weakref.WeakSet[_Child] = weakref.WeakSet()


@atexit.register
def _end_all() -> None:
    # Before the interpreter finalizes: its reader threads must not meet a half-torn-down io.
    for child in list(_running):
        child.kill()


class _Child:
    """One running port program: requests in, one answer per request out."""

    def __init__(self, argv: list[str], label: str):
        self.label = label
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self.answers: queue.Queue[str | None] = queue.Queue()
        #: When the program last wrote a line on stderr (its log): a start's progress. Noise
        #: on stdout is not: a port that only floods its protocol channel is not starting.
        self.last_output = time.monotonic()
        self.max_line, self.max_request = _bytes(MAX_LINE), _bytes(MAX_REQUEST)
        self.max_captured = _bytes(MAX_CAPTURED)
        #: Bytes written since the last request was sent; bytes copied to captured output.
        self.request_bytes = self.captured = 0
        #: Why the adapter killed it for what it wrote ("" while it has not).
        self.flooded = ""
        #: Whether a start that did not answer was ended by `START_LIMIT`, not by silence.
        self.start_limit_reached = False
        #: The port's warnings for the user (`WARNING_PREFIX`), not yet passed on.
        self.warnings: collections.deque[str] = collections.deque()
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "REMAT_PROTOCOL": str(PROTOCOL_VERSION)},
        )
        _running.add(self)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _lines(self, stream, name: str):
        """`stream`'s lines, decoded, each at most `max_line` bytes; a port past a limit is
        killed (`flooded` says why) and its lines end."""
        while raw := stream.readline(self.max_line + 1):
            self.request_bytes += len(raw)
            if len(raw) > self.max_line and not raw.endswith(b"\n"):
                self._flood(f"wrote a line of over {self.max_line} bytes on {name}", MAX_LINE)
                return
            if self.request_bytes > self.max_request:
                self._flood(f"wrote over {self.max_request} bytes in one request", MAX_REQUEST)
                return
            yield raw.decode("utf-8", errors="replace").rstrip("\n")

    def _flood(self, what: str, limit: tuple[str, int]) -> None:
        self.flooded = self.flooded or f"{what} (the limit: {limit[0]})"
        with contextlib.suppress(OSError):
            self.process.kill()

    def _capture(self, line: str) -> None:
        """Copy a line to the captured output (the worker's file), up to `max_captured`."""
        if self.captured > self.max_captured:
            return
        self.captured += len(line) + 1
        if self.captured > self.max_captured:
            line = f"[{self.label}] more output not kept: past {self.max_captured} bytes"
            line += f" ({MAX_CAPTURED[0]})"
        print(line, file=sys.stderr, flush=True)

    def _read_stdout(self) -> None:
        try:
            for line in self._lines(self.process.stdout, "stdout"):
                if line.startswith("{") and '"id"' in line:
                    self.answers.put(line)
                else:  # noise: the worker's output file keeps it, the protocol ignores it
                    self._capture(f"[{self.label} stdout] {line}")
        finally:
            self.process.stdout.close()
            self.answers.put(None)

    def _read_stderr(self) -> None:
        for line in self._lines(self.process.stderr, "stderr"):
            self.last_output = time.monotonic()
            self.stderr_tail.append(line[:_TAIL_LINE])
            if line.startswith(WARNING_PREFIX):
                self.warnings.append(line.removeprefix(WARNING_PREFIX))
            self._capture(f"[{self.label} stderr] {line}")
        self.process.stderr.close()

    def pass_on_warnings(self) -> None:
        """Raise the warnings read so far as `PortWarning`s, in the thread that calls this
        (the reader thread's would reach no caller)."""
        while self.warnings:
            text = f"{self.label}: {self.warnings.popleft()}"
            warnings.warn(text, PortWarning, stacklevel=2)

    def await_answer(self, wait: float, *, progress: bool = False) -> str | None:
        """The next answer line (None once stdout ends); `queue.Empty` after `wait` seconds.
        With `progress`, `wait` counts from the program's last line on stderr, not from
        the call: a start that logs as it installs its runtime is not a hang. It still
        ends `START_LIMIT` seconds after the call (a port that talks but never answers)."""
        if not progress:
            return self.answers.get(timeout=wait)
        limit = time.monotonic() + max(START_LIMIT, wait)
        while True:
            deadline = min(self.last_output + wait, limit)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.start_limit_reached = deadline == limit
                raise queue.Empty
            with contextlib.suppress(queue.Empty):  # wake to read how recent the output is
                return self.answers.get(timeout=remaining)

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        self.request_bytes = 0  # each request's answer, and what comes with it, is counted
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def exit_description(self) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        code = self.process.returncode
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by {signal_name(-code)}"
        return f"exit code {code}"

    def stderr_text(self, wait: float = 0.0) -> str:
        """The port's last stderr lines, for a fault's message (waiting up to `wait` seconds
        for a process that has ended to have them all read)."""
        self.read_all_stderr(wait)
        lines = list(self.stderr_tail)
        if not lines:
            return "\nits stderr: (nothing)"
        return "\nits last stderr lines:\n" + "\n".join(f"  | {line}" for line in lines)

    def read_all_stderr(self, wait: float) -> None:
        """Wait up to `wait` seconds for the stderr of a process that has ended to be read."""
        if wait:
            self._stderr_reader.join(timeout=wait)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        # stdout and stderr end with the process; their reader threads close them.
        with contextlib.suppress(OSError, ValueError):
            self.process.stdin.close()


def _answers(method):
    """A contract method whose answer, if it breaks the protocol, restarts the process and
    carries the port's last stderr lines (as a violation `_call` finds does)."""

    @functools.wraps(method)
    def decoded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except ProtocolViolation as error:
            child, self._child = self._child, None
            if child is None:  # `_call` has already said it all
                raise
            child.kill()
            raise ProtocolViolation(f"{error}{child.stderr_text(wait=1.0)}") from None

    return decoded


class ProcessPort(Implementation):
    """A port that is a program speaking docs/PROTOCOL.md.

    **Arguments:**

    - `name`: the registry name; the program's `hello` must give the same.
    - `argv`: the command that starts the program.
    - `timeout`: seconds to wait for one answer (default: `REMAT_PROCESS_TIMEOUT`, else 120;
      under the suite, at most its `--timeout`).

    The program is started here and asked `hello` (its framework, versions, policies and
    expectations); raises `ProcessPortUnavailable` if it cannot run.
    """

    checkpoint_api: str = ""
    #: Its evidence is the port's own word (`contract.MEASURED_BY_PORT`).
    self_reported = True
    #: Why (l) has nothing to check on a process port whose `hello` advertises no
    #: `state_variants`: it answers no `state_step` (docs/PROTOCOL.md, *Randomness and state*).
    not_stateful = (
        f"the process protocol (docs/PROTOCOL.md, protocols 1 to {PROTOCOL_VERSION}) has a "
        "state_step operation, but this port's hello advertises no state_variants"
    )
    #: The block's variants the port's `hello` advertises (`state_variants`): {} for none.
    state_variants: dict[str, str] = {}  # noqa: RUF012 - replaced per instance, never mutated
    #: (g) sends it `init_params` with bad arguments too: the protocol requires the checks.
    checks_init_inputs = True

    def __init__(self, name: str, argv: list[str], *, timeout: float | None = None):
        self.name, self.argv = name, list(argv)
        self.timeout = _timeout() if timeout is None else float(timeout)
        if shutil.which(self.argv[0]) is None:
            raise ProcessPortUnavailable(f"needs {self.argv[0]!r}, not found on PATH")
        self._child: _Child | None = None
        self._next_id = 0
        self.protocol = PROTOCOL_VERSION
        self.hello = self._start()
        self.protocol = int(self.hello["protocol"])
        self.framework = str(self.hello.get("framework", ""))
        self.checkpoint_api = str(self.hello.get("checkpoint_api", ""))
        try:
            self.policies, self.inexpressible = self._declared_policies()
            self.expectations = self._declared_expectations()
            self.compositions, self.not_composable = self._declared_compositions()
            self.composition_expectations = self._declared_composition_expectations()
            self.state_variants = self._declared_state_variants()
        except ProtocolViolation:
            self.close()
            raise
        # (j)'s expectations are per instrument family: hello's, else the port's framework.
        self.instrument_family = str(self.hello.get("instrument_family") or self.framework)

    def _declared_policies(self) -> tuple[dict[str, str], dict[str, str]]:
        """The remat policies from `hello` (optional `policies`, `inexpressible`). Protocol 1
        carries `checkpoint` as a boolean, so a port speaking it expresses none and full
        only; protocol 2 carries the policy's name, and a port may declare any."""
        what = f"{self.name}: the answer to 'hello'"
        policies = self.hello.get("policies", dict(WIRE_POLICIES))
        inexpressible = self.hello.get("inexpressible", {})
        if not isinstance(policies, dict):
            raise ProtocolViolation(f"{what}: 'policies' must be an object")
        beyond = sorted(set(policies) - set(WIRE_POLICIES))
        if beyond and self.protocol < 2:
            raise ProtocolViolation(
                f"{what} declares {', '.join(beyond)}: protocol 1 carries checkpoint on/off "
                "only (none and full); protocol 2 carries a policy by name"
            )
        if not isinstance(inexpressible, dict):
            raise ProtocolViolation(f"{what}: 'inexpressible' must be an object")
        cannot = _CANNOT[min(self.protocol, 2)]
        defaults = {n: cannot for n in POLICY_NAMES if n not in policies and n not in inexpressible}
        try:
            check_declaration(what, policies, {**defaults, **inexpressible})
        except TypeError as error:
            raise ProtocolViolation(str(error)) from None
        return dict(policies), {**defaults, **inexpressible}

    def _declared_expectations(self) -> dict[str, Any]:
        """The expectations `hello` declares for the port's instrument (optional; property
        (j) holds them to the policy vocabulary, then the records to them)."""
        if "expectations" not in self.hello:
            return {}
        try:
            return from_wire(self.hello["expectations"])
        except ValueError as error:
            raise ProtocolViolation(f"{self.name}: the answer to 'hello': {error}") from None

    def _declared_compositions(self) -> tuple[dict[str, str], dict[str, str]]:
        """The composition cases from `hello` (protocol 3: optional `compositions`,
        `not_composable`); a port speaking an older protocol expresses none."""
        what = f"{self.name}: the answer to 'hello'"
        if self.protocol < 3:
            cannot = f"protocol {self.protocol} carries no nesting (protocol 3 does)"
            return {}, {case: cannot for case in composition.CASES}
        found = self.hello.get("compositions", {}), self.hello.get("not_composable", {})
        try:
            composition.check_declaration(what, *found)
        except TypeError as error:
            raise ProtocolViolation(str(error)) from None
        return dict(found[0]), dict(found[1])

    def _declared_composition_expectations(self) -> dict[str, composition.Composed]:
        """What the port's instrument shows per composition case, from `hello` (optional:
        `composition_expectations`, case -> {roles, forward_matmuls, rerun_matmuls, why,
        degradation}); property (k) holds them to the composition rules."""
        data = self.hello.get("composition_expectations", {}) if self.protocol >= 3 else {}
        what = f"{self.name}: the answer to 'hello': composition_expectations"
        if not isinstance(data, dict):
            raise ProtocolViolation(f"{what} must be an object")
        table = {}
        for case, item in data.items():
            keys = {"roles", "forward_matmuls", "rerun_matmuls", "why", "degradation"}
            if not isinstance(item, dict) or set(item) - keys or "roles" not in item:
                raise ProtocolViolation(f"{what}[{case!r}] must be an object of {sorted(keys)}")
            roles, why = item["roles"], item.get("why", "")
            counts = [item.get(k) for k in ("forward_matmuls", "rerun_matmuls")]
            if (
                not isinstance(roles, list)
                or not all(isinstance(r, str) for r in roles)
                or not isinstance(why, str)
                or any(c is not None and (isinstance(c, bool) or not isinstance(c, int))
                       for c in counts)
            ):  # fmt: skip
                raise ProtocolViolation(f"{what}[{case!r}] is malformed: {item!r}"[:300])
            table[str(case)] = composition.Composed(
                frozenset(roles), counts[0], counts[1], why, bool(item.get("degradation"))
            )
        return table

    def _declared_state_variants(self) -> dict[str, str]:
        """The block's variants from `hello` (optional `state_variants`: variant -> native
        spelling); a port that advertises none answers no `state_step`."""
        found = self.hello.get("state_variants", {})
        if not isinstance(found, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v for k, v in found.items()
        ):
            raise ProtocolViolation(
                f"{self.name}: the answer to 'hello': 'state_variants' must be an object of "
                f"variant -> spelling (non-empty strings), got {found!r}"[:300]
            )
        return dict(found)

    @classmethod
    def from_command(cls, name: str, command: str) -> ProcessPort:
        """The port registered as `name` with the entry point value `exec:<command>`."""
        return cls(name, expand_command(command))

    # -- the process ----------------------------------------------------------------------

    def _start(self) -> dict[str, Any]:
        """Start the program and negotiate the version: every version the adapter speaks is
        offered; a port that refuses the newest (protocol 1's ProtocolError) is asked again in
        the one before."""
        self._child = _Child(self.argv, self.name)
        offered = [v for v in PROTOCOL_VERSIONS if v <= self.protocol]
        what = f"{self.name}: the answer to 'hello'"
        while True:
            try:
                hello = self._call(
                    "hello", timeout=self.timeout, protocol=offered[-1], protocols=offered
                )
                break
            except ProcessPortUnavailable:
                self.close()
                raise
            except ProtocolViolation as error:
                refused = "type 'ProtocolError'" in str(error) and len(offered) > 1
                if not refused or self._child is None:
                    self.close()
                    raise
                offered.pop()
        try:
            for key in HELLO_FIELDS:
                field(hello, key, what)
            if hello["name"] != self.name:
                raise ProtocolViolation(
                    f"{self.name}: 'hello' says the port is {hello['name']!r}, "
                    f"registered as {self.name!r}"
                )
            if hello["protocol"] not in offered or isinstance(hello["protocol"], bool):
                raise ProtocolViolation(
                    f"{self.name}: 'hello' speaks protocol {hello['protocol']!r}, "
                    f"the adapter {', '.join(map(str, offered))}"
                )
        except ProtocolViolation:
            self.close()
            raise
        self.protocol = int(hello["protocol"])
        return hello

    def close(self) -> None:
        """Ask the program to exit, then make sure it did."""
        child, self._child = self._child, None
        if child is None:
            return
        if child.process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                child.send({"id": 0, "op": "shutdown"})
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.process.wait(timeout=2)
        child.kill()
        # Its last lines read, for the warnings among them (a port's child that still holds
        # its stderr would make this wait: a few seconds, at most).
        child.read_all_stderr(wait=5.0)
        child.pass_on_warnings()

    def __del__(self):
        # Also at interpreter exit, when module globals may be gone: kill, nothing more.
        child = self.__dict__.get("_child")
        if child is not None:
            try:  # noqa: SIM105 - contextlib may already be torn down here
                child.process.kill()
            except Exception:
                pass

    def _request(self, op: str, **arguments: Any) -> dict[str, Any]:
        """One request to a running program (started again after a failure)."""
        if self._child is None:
            self._start()
        return self._call(op, **arguments)

    def _call(self, op: str, *, timeout: float | None = None, **arguments: Any) -> dict[str, Any]:
        child = self._child
        self._next_id += 1
        ident = self._next_id
        what = f"{self.name}: the answer to {op!r} (request {ident})"
        wait = _request_timeout(self.timeout) if timeout is None else timeout
        with contextlib.suppress(OSError, ValueError):  # it died; reading says how
            child.send({"id": ident, "op": op, **arguments})
        asked = time.monotonic()
        try:
            line = child.await_answer(wait, progress=op == "hello")
        except queue.Empty:
            child.pass_on_warnings()
            child.kill()
            self._child = None
            raise ProcessPortTimeout(
                f"{self.name}: no answer to {op!r} {_how_long(child, op, wait, asked)}; "
                f"killed{child.stderr_text(wait=1.0)}"
            ) from None
        child.pass_on_warnings()
        if line is None and child.flooded:
            child.kill()
            self._child = None
            raise ProtocolViolation(
                f"{self.name}: stopped while answering {op!r}: it {child.flooded}; killed"
                f"{child.stderr_text(wait=1.0)}"
            )
        if line is None:
            how = child.exit_description()
            child.kill()
            self._child = None
            raise ProcessPortCrashed(
                f"{self.name}: the process ended ({how}) before answering {op!r}"
                f"{child.stderr_text(wait=1.0)}"
            )
        try:
            return self._parse(line, ident, op, what)
        except ProtocolViolation as error:
            if op == "hello" and "type 'ProtocolError'" in str(error):
                raise  # the version negotiation reads it; the process stays
            child.kill()
            self._child = None
            raise ProtocolViolation(f"{error}{child.stderr_text(wait=1.0)}") from None

    def _parse(self, line: str, ident: int, op: str, what: str) -> dict[str, Any]:
        try:
            answer = json.loads(line)
        except json.JSONDecodeError as error:
            raise ProtocolViolation(f"{what} is not JSON ({error}): {line[:200]}") from None
        if not isinstance(answer, dict) or answer.get("id") != ident:
            got = answer.get("id") if isinstance(answer, dict) else None
            raise ProtocolViolation(f"{what} carries id {got!r}, expected {ident}")
        if ("result" in answer) == ("error" in answer):
            raise ProtocolViolation(f"{what} must hold exactly one of 'result' and 'error'")
        if "error" in answer:
            error = answer["error"]
            if not isinstance(error, dict) or not isinstance(error.get("message"), str):
                raise ProtocolViolation(f"{what}: an error must be {{type, message}}: {error!r}")
            kind, message = error.get("type"), error["message"]
            if kind in _ERRORS and op not in ("hello", "shutdown"):
                raise _ERRORS[kind](message)
            if kind == "Unavailable" and op == "hello":
                raise ProcessPortUnavailable(message)
            raise ProtocolViolation(f"{what} is an error of type {kind!r}: {message}")
        result = answer["result"]
        if not isinstance(result, dict):
            raise ProtocolViolation(f"{what}: 'result' must be an object")
        return result

    # -- arguments ------------------------------------------------------------------------

    @staticmethod
    def _integer(value: Any, name: str) -> Any:
        """An integer argument on the wire (docs/PROTOCOL.md, *Values*): a decimal string for
        an integer value; for anything else, what JSON can say of it, for the port to reject
        (property (g) on the wire): a bool as a JSON boolean, a non-integral or non-finite
        number as its decimal string (`"1.5"`, `"nan"`, `"inf"`), None as null, an array as
        a JSON list. What JSON cannot carry apart from an integer (a Python string) is
        refused here, with the contract's TypeError."""
        if getattr(value, "shape", None) == ():
            value = value.item()  # a 0-d array: its scalar
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if value is None:
            return None
        if isinstance(value, numbers.Integral):
            return str(int(value))
        if isinstance(value, numbers.Real):
            number = float(value)
            if math.isnan(number):
                return "nan"
            if math.isinf(number):
                return "inf" if number > 0 else "-inf"
            return str(int(number)) if number.is_integer() else repr(number)
        if hasattr(value, "shape"):
            array = np.asarray(value)
            if array.dtype.kind in "biuf":
                return array.tolist()
        raise TypeError(f"{name} must be an integer scalar, got {type(value).__name__}: {value!r}")

    @staticmethod
    def _x(x: Any) -> dict[str, Any]:
        """x as an array object. A real array is sent as float32 (a value past float32's range
        becomes an infinity); a bool or complex one with its own dtype, and any shape, for
        the port to reject (property (g) on the wire). What no array object can carry (an
        object or ragged array, strings, more than 2**31 - 1 elements) is refused here."""
        try:
            array = np.asarray(x)
        except (ValueError, TypeError) as error:
            raise TypeError(f"x must be a real array-like of shape (D,): {error}") from None
        category = dtype_category(array.dtype)
        if category not in ("float", "int", "bool", "complex"):
            raise TypeError(f"x must have a real floating or integer dtype, got {array.dtype}")
        if array.size > MAX_ELEMENTS:
            raise SizeLimitError(f"x is too large: {array.size} elements, past 2**31 - 1 per array")
        if category == "bool":
            data = np.ascontiguousarray(array, dtype=np.bool_).tobytes()
            return {"dtype": "bool", "shape": list(array.shape), "data": _b64(data)}
        if category == "complex":
            data = np.ascontiguousarray(array, dtype="<c8").tobytes()
            return {"dtype": "complex64", "shape": list(array.shape), "data": _b64(data)}
        with np.errstate(over="ignore"):  # past float32's range: inf, which the port rejects
            return encode_array(np.array(array, dtype=np.float32))

    def _policy(self, checkpoint: Any) -> Policy:
        """The contract's `checkpoint=` as a policy the port declares; `ValueError` naming
        `checkpoint` for one it cannot express (with the declared reason)."""
        return declared_policy(checkpoint, self.name, self.policies, self.inexpressible)

    def _checkpoint(self, checkpoint: Any) -> dict[str, Any]:
        """`checkpoint` (on or off) and, from protocol 2 on, `policy` (its name); from
        protocol 3 on, a composition case as `nesting` (full remat, composed)."""
        if isinstance(checkpoint, composition.Nesting):
            if checkpoint.case not in self.compositions:
                reason = composition.not_composable(self)[checkpoint.case]
                raise ValueError(
                    f"checkpoint={checkpoint.case}: port {self.name} cannot express it ({reason})"
                )
            return {"checkpoint": True, "policy": FULL.label, "nesting": checkpoint.case}
        policy = self._policy(checkpoint)
        if self.protocol < 2:
            return {"checkpoint": bool(policy)}
        return {"checkpoint": bool(policy), "policy": policy.label}

    @staticmethod
    def _params(params: Params) -> dict[str, Any]:
        return {name: encode_array(value) for name, value in params.as_dict().items()}

    def _array(self, result: dict[str, Any], key: str, op: str, shape: tuple) -> np.ndarray:
        what = f"{self.name}: {key!r} in the answer to {op!r}"
        array = decode_array(field(result, key, what), what)
        if array.shape != shape:
            raise ProtocolViolation(f"{what} has shape {array.shape}, expected {shape}")
        return array

    # -- the contract ---------------------------------------------------------------------

    @_answers
    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        result = self._request(
            "init_params",
            seed=self._integer(seed, "seed"),
            dim=self._integer(dim, "dim"),
            features=self._integer(features, "features"),
            max_bytes=str(max_bytes()),
        )
        d, f = _accepted(dim, "dim", self.name), _accepted(features, "features", self.name)
        shapes = {"w1": (d, f), "b1": (f,), "w2": (f, f), "b2": (f,)}
        params = field(result, "params", f"{self.name}: the answer to 'init_params'")
        if not isinstance(params, dict):
            raise ProtocolViolation(f"{self.name}: 'params' in 'init_params' must be an object")
        return Params(**{k: self._array(params, k, "init_params", s) for k, s in shapes.items()})

    @_answers
    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        result = self._request(
            "forward", params=self._params(params), x=self._x(x), **self._checkpoint(checkpoint)
        )
        return self._array(result, "y", "forward", (params.features,))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        result = self._request(
            "vjp",
            params=self._params(params),
            x=self._x(x),
            cotangent=encode_array(np.asarray(cotangent, np.float32)),
            **self._checkpoint(checkpoint),
        )
        shapes = {**{k: v.shape for k, v in params.as_dict().items()}, "x": (params.dim,)}
        return Grads(**{k: self._array(result, k, "vjp", s) for k, s in shapes.items()})

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: Any = True
    ) -> BackwardRecord:
        result = self._request(
            "evidence",
            of="vjp",
            params=self._params(params),
            x=self._x(x),
            **self._checkpoint(checkpoint),
        )
        return decode_record(result, f"{self.name}: the answer to 'evidence' of 'vjp'")

    @_answers
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        result = self._request(
            "evidence",
            of="exercise",
            seed=self._integer(seed, "seed"),
            x=self._x(x),
            features=self._integer(features, "features"),
            max_bytes=str(max_bytes()),
        )
        return decode_record(result, f"{self.name}: the answer to 'evidence' of 'exercise'")

    @_answers
    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> np.ndarray:
        result = self._request(
            "nn_checkpoint_forward",
            seed=self._integer(seed, "seed"),
            x=self._x(x),
            features=self._integer(features, "features"),
            max_bytes=str(max_bytes()),
        )
        shape = (_accepted(features, "features", self.name),)
        return self._array(result, "y", "nn_checkpoint_forward", shape)

    @_answers
    def state_step(
        self, seed: Any, x: Any, features: Any, rate: Any, cotangent: Any,
        checkpoint: bool = True, variant: str = DEFAULT_VARIANT,
    ) -> StateStep:  # fmt: skip
        """The second exercise (`implementations.stateful`) through the port's `state_step`,
        for a variant its `hello` advertises; the reply is `StateStep.to_wire`'s form."""
        if variant not in self.state_variants:
            raise ValueError(
                f"variant must be one of {list(self.state_variants)} (port {self.name}'s "
                f"state_variants), got {variant!r}"
            )
        seed, x, features, rate, cotangent = checked(seed, x, features, rate, cotangent)
        result = self._request(
            "state_step",
            seed=self._integer(seed, "seed"),
            x=encode_array(x),
            features=self._integer(features, "features"),
            rate=rate,
            cotangent=encode_array(cotangent),
            checkpoint=bool(checkpoint),
            variant=variant,
        )
        try:
            return StateStep.from_wire(result)
        except (KeyError, TypeError, ValueError) as error:
            raise ProtocolViolation(
                f"{self.name}: the answer to 'state_step' is not a StateStep: {error!r}"[:300]
            ) from None

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def from_numpy(self, array: np.ndarray) -> Any:
        return np.array(array, copy=True)  # the port's own arrays live in its process

    def matmul_precision(self) -> dict[str, str]:
        reported = self.hello.get("matmul_precision")
        if isinstance(reported, dict):
            return {str(k): str(v) for k, v in reported.items()}
        return {"default": NOT_REPORTED, "pinned": NOT_REPORTED}

    def versions(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in dict(self.hello.get("versions", {})).items()}


def _how_long(child: _Child, op: str, wait: float, asked: float) -> str:
    """How long a port that did not answer was waited for, as a timeout's message says it."""
    if op != "hello":
        return f"within {wait:g} s"
    if child.start_limit_reached:
        return f"within {max(START_LIMIT, wait):g} s, the limit of a start, though it logged"
    waited = time.monotonic() - asked
    return f"after {waited:.0f} s, the last {wait:g} s of them without a line on stderr"


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


def _accepted(value: Any, name: str, port: str) -> int:
    """An integer argument the port accepted: a port that answers a bad one breaks the
    protocol (it must have refused it)."""
    wire = ProcessPort._integer(value, name)
    if isinstance(wire, str) and wire.lstrip("-").isdigit():
        return int(wire)
    raise ProtocolViolation(
        f"{port}: answered a request whose {name} is {wire!r}, which it must refuse "
        "(docs/PROTOCOL.md, Values)"
    )
