"""`ProcessPort`: a port in any language, as an `Implementation` (docs/PROTOCOL.md).

The port is a program that reads JSON requests on stdin and answers on
stdout. This adapter starts it, converts the contract's numpy values to the
wire and back, and contains what a foreign program can do wrong: a crash
(its process ends before it answers), a hang (no answer in time), noise on
stdout (copied to stderr), and a protocol violation (an answer that breaks
the protocol). Each is an exception that names the request; the next call
starts a fresh process. The child stays in this process's group, so a suite
worker that is stopped takes it along. Imports numpy and the standard library.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import queue
import shlex
import shutil
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import (
    NOT_REPORTED,
    BackwardRecord,
    Grads,
    Implementation,
    Params,
    SizeLimitError,
    _integer_scalar,
    check_x_spec,
    max_bytes,
)
from ..policies import POLICY_NAMES, check_declaration
from .wire import (
    PROTOCOL_VERSION,
    ProtocolViolation,
    decode_array,
    decode_record,
    encode_array,
    field,
)

#: What a process port expresses when its `hello` declares no policies: the wire's boolean.
WIRE_POLICIES = {"none": "checkpoint: false", "full": "checkpoint: true"}
_WIRE_CANNOT = {
    name: f"protocol {PROTOCOL_VERSION} carries checkpoint on/off only"
    for name in POLICY_NAMES
    if name not in WIRE_POLICIES
}

#: Seconds to wait for one answer, unless `REMAT_PROCESS_TIMEOUT` says otherwise.
DEFAULT_TIMEOUT = 120.0
_STDERR_LINES = 20

# The error types a port may answer with, as the Python exceptions they become.
_ERRORS: dict[str, type[Exception]] = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "SizeLimitError": SizeLimitError,
}


class ProcessPortError(RuntimeError):
    """A process port that failed as a program (not as a port): it crashed, hung or erred."""


class ProcessPortCrashed(ProcessPortError):
    """The port's process ended before it answered."""


class ProcessPortTimeout(ProcessPortError):
    """The port's process did not answer in time; it was killed."""


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
    setting = os.environ.get("REMAT_PROCESS_TIMEOUT", "").strip()
    if not setting:
        return DEFAULT_TIMEOUT
    try:
        value = float(setting)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"REMAT_PROCESS_TIMEOUT must be a positive number of seconds: {setting!r}")
    return value


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
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "REMAT_PROTOCOL": str(PROTOCOL_VERSION)},
        )
        _running.add(self)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        for raw in self.process.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            if line.startswith("{") and '"id"' in line:
                self.answers.put(line)
            else:  # noise: the worker's output file keeps it, the protocol ignores it
                print(f"[{self.label} stdout] {line}", file=sys.stderr, flush=True)
        self.answers.put(None)

    def _read_stderr(self) -> None:
        for raw in self.process.stderr:
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            self.stderr_tail.append(line)
            print(f"[{self.label} stderr] {line}", file=sys.stderr, flush=True)

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def exit_description(self) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        code = self.process.returncode
        if code is None:
            return "still running"
        if code < 0:
            import signal

            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
            return f"killed by signal {-code}"
        return f"exit code {code}"

    def stderr_text(self) -> str:
        lines = list(self.stderr_tail)
        return ("; its last stderr lines:\n" + "\n".join(lines)) if lines else "; no stderr"

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        # stdout and stderr end with the process; their reader threads close them.
        with contextlib.suppress(OSError, ValueError):
            self.process.stdin.close()


class ProcessPort(Implementation):
    """A port that is a program speaking docs/PROTOCOL.md.

    **Arguments:**

    - `name`: the registry name; the program's `hello` must give the same.
    - `argv`: the command that starts the program.
    - `timeout`: seconds to wait for one answer (default: `REMAT_PROCESS_TIMEOUT`, else 120).

    The program is started here and asked `hello` (its framework and
    versions); raises `ProcessPortUnavailable` if it cannot run.
    """

    checkpoint_api: str = ""

    def __init__(self, name: str, argv: list[str], *, timeout: float | None = None):
        self.name, self.argv = name, list(argv)
        self.timeout = _timeout() if timeout is None else float(timeout)
        if shutil.which(self.argv[0]) is None:
            raise ProcessPortUnavailable(f"needs {self.argv[0]!r}, not found on PATH")
        self._child: _Child | None = None
        self._next_id = 0
        self.hello = self._start()
        self.framework = str(self.hello.get("framework", ""))
        self.checkpoint_api = str(self.hello.get("checkpoint_api", ""))
        try:
            self.policies, self.inexpressible = self._declared_policies()
        except ProtocolViolation:
            self.close()
            raise
        # (j)'s expectations are per instrument family: hello's, else the port's framework.
        self.instrument_family = str(self.hello.get("instrument_family") or self.framework)

    def _declared_policies(self) -> tuple[dict[str, str], dict[str, str]]:
        """The remat policies from `hello` (optional `policies`, `inexpressible`): protocol 1
        carries `checkpoint` as a boolean, so a port can express none and full only."""
        what = f"{self.name}: the answer to 'hello'"
        policies = self.hello.get("policies", dict(WIRE_POLICIES))
        inexpressible = self.hello.get("inexpressible", {})
        beyond = sorted(set(policies) - set(WIRE_POLICIES)) if isinstance(policies, dict) else []
        if beyond:
            raise ProtocolViolation(
                f"{what} declares {', '.join(beyond)}: protocol {PROTOCOL_VERSION} carries "
                "checkpoint on/off only (none and full)"
            )
        if not isinstance(inexpressible, dict):
            raise ProtocolViolation(f"{what}: 'inexpressible' must be an object")
        try:
            check_declaration(what, policies, {**_WIRE_CANNOT, **inexpressible})
        except TypeError as error:
            raise ProtocolViolation(str(error)) from None
        return dict(policies), {**_WIRE_CANNOT, **inexpressible}

    @classmethod
    def from_command(cls, name: str, command: str) -> ProcessPort:
        """The port registered as `name` with the entry point value `exec:<command>`."""
        return cls(name, expand_command(command))

    # -- the process ----------------------------------------------------------------------

    def _start(self) -> dict[str, Any]:
        self._child = _Child(self.argv, self.name)
        try:
            hello = self._call("hello", protocol=PROTOCOL_VERSION)
        except ProcessPortUnavailable:
            self.close()
            raise
        for key in ("name", "framework", "versions", "protocol"):
            field(hello, key, f"{self.name}: the answer to 'hello'")
        if hello["name"] != self.name:
            self.close()
            raise ProtocolViolation(
                f"{self.name}: 'hello' says the port is {hello['name']!r}, "
                f"registered as {self.name!r}"
            )
        if hello["protocol"] != PROTOCOL_VERSION:
            self.close()
            raise ProtocolViolation(
                f"{self.name}: 'hello' speaks protocol {hello['protocol']!r}, "
                f"the adapter {PROTOCOL_VERSION}"
            )
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

    def _call(self, op: str, **arguments: Any) -> dict[str, Any]:
        child = self._child
        self._next_id += 1
        ident = self._next_id
        what = f"{self.name}: the answer to {op!r} (request {ident})"
        with contextlib.suppress(OSError, ValueError):  # it died; reading says how
            child.send({"id": ident, "op": op, **arguments})
        try:
            line = child.answers.get(timeout=self.timeout)
        except queue.Empty:
            child.kill()
            self._child = None
            raise ProcessPortTimeout(
                f"{self.name}: no answer to {op!r} within {self.timeout:g} s; killed"
                f"{child.stderr_text()}"
            ) from None
        if line is None:
            how = child.exit_description()
            child.kill()
            self._child = None
            raise ProcessPortCrashed(
                f"{self.name}: the process ended ({how}) before answering {op!r}"
                f"{child.stderr_text()}"
            )
        try:
            return self._parse(line, ident, op, what)
        except ProtocolViolation:
            child.kill()
            self._child = None
            raise

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
    def _integer(value: Any, name: str) -> str:
        # Type and integrality here (JSON cannot carry a Python bool or NaN as they are);
        # the range is the port's to check.
        return str(_integer_scalar(value, name))

    @staticmethod
    def _x(x: Any) -> dict[str, Any]:
        try:
            array = np.asarray(x)
        except (ValueError, TypeError) as error:
            raise TypeError(f"x must be a real array-like of shape (D,): {error}") from None
        check_x_spec(array.shape, array.dtype)
        with np.errstate(over="ignore"):  # past float32's range: inf, which the port rejects
            return encode_array(np.array(array, dtype=np.float32))

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

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        seed_text = self._integer(seed, "seed")
        features_text = self._integer(features, "features")
        dim_text = self._integer(dim, "dim")
        result = self._request(
            "init_params",
            seed=seed_text,
            dim=dim_text,
            features=features_text,
            max_bytes=str(max_bytes()),
        )
        d, f = int(dim_text), int(features_text)
        shapes = {"w1": (d, f), "b1": (f,), "w2": (f, f), "b2": (f,)}
        params = field(result, "params", f"{self.name}: the answer to 'init_params'")
        if not isinstance(params, dict):
            raise ProtocolViolation(f"{self.name}: 'params' in 'init_params' must be an object")
        return Params(**{k: self._array(params, k, "init_params", s) for k, s in shapes.items()})

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        result = self._request(
            "forward", params=self._params(params), x=self._x(x), checkpoint=bool(checkpoint)
        )
        return self._array(result, "y", "forward", (params.features,))

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        result = self._request(
            "vjp",
            params=self._params(params),
            x=self._x(x),
            cotangent=encode_array(np.asarray(cotangent, np.float32)),
            checkpoint=bool(checkpoint),
        )
        shapes = {**{k: v.shape for k, v in params.as_dict().items()}, "x": (params.dim,)}
        return Grads(**{k: self._array(result, k, "vjp", s) for k, s in shapes.items()})

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        result = self._request(
            "evidence",
            of="vjp",
            params=self._params(params),
            x=self._x(x),
            checkpoint=bool(checkpoint),
        )
        return decode_record(result, f"{self.name}: the answer to 'evidence' of 'vjp'")

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        result = self._request(
            "evidence",
            of="exercise",
            seed=self._integer(seed, "seed"),
            x=self._x(x),
            features=self._integer(features, "features"),
        )
        return decode_record(result, f"{self.name}: the answer to 'evidence' of 'exercise'")

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> np.ndarray:
        seed_text = self._integer(seed, "seed")
        features_text = self._integer(features, "features")
        wire_x = self._x(x)
        result = self._request(
            "nn_checkpoint_forward",
            seed=seed_text,
            x=wire_x,
            features=features_text,
            max_bytes=str(max_bytes()),
        )
        return self._array(result, "y", "nn_checkpoint_forward", (int(features_text),))

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
