"""A process port that serves a Python port over docs/PROTOCOL.md: the suite's own mutant of
a process port (`wire_ignores_policy`), and a check that the protocol carries everything a
Python port says.

Run as a program: `python wire_port.py --name=NAME --serve=PORT [--ignore-policy]
[--values-without-checkpoint]`. It loads
the Python port `PORT` in its own process and answers each request with it: integers read by
the wire's rules (a boolean or a non-decimal string is a ValueError, null or a list a
TypeError), x decoded with its dtype and shape, the call under `max_bytes`, its errors by
type, its records with roles and memory spaces. Its hello declares the served port's
policies and instrument family (no expectations of its own: it is held to the suite's). With
`--ignore-policy` it reads `checkpoint` only, as a port written for protocol 1 would: every
policy but none runs as full remat, which property (j) alone must catch. With
`--values-without-checkpoint` its values come from the served port with the checkpoint off while
its evidence is the honest checkpoint's: two paths the adapter cannot tell apart (docs/PROTOCOL.md,
the trust boundary).
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # started as a program: the suite's packages beside this file
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

import implementations
from conformance.checking import policy_expectations
from implementations import composition, manifests
from implementations.contract import Params, byte_budget
from implementations.policies import Policy, declared, inexpressible
from implementations.process import ProcessPort


class WireIgnoresPolicy(ProcessPort):
    """The canonical port behind the protocol, reading `checkpoint` and never `policy`."""

    def __init__(self):
        argv = [sys.executable, str(Path(__file__).resolve()), "--name=wire_ignores_policy"]
        serve = f"--serve={manifests.CANONICAL_PORT}"
        super().__init__("wire_ignores_policy", [*argv, serve, "--ignore-policy"])


# -- the server -------------------------------------------------------------------------------

_DECIMAL = re.compile(r"-?[0-9]+")


def _integer(value: Any, name: str) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, not a boolean")
    if value is None or isinstance(value, (list, dict)):
        raise TypeError(f"{name} must be an integer (a decimal string), got {value!r}")
    if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _array(value: dict[str, Any]) -> np.ndarray:
    dtypes = {"float32": "<f4", "bool": "?", "complex64": "<c8"}
    if not isinstance(value, dict) or value.get("dtype") not in dtypes:
        raise TypeError(f"an array must be float32, bool or complex64, got {value!r}"[:200])
    raw = base64.b64decode(value["data"])
    return np.frombuffer(raw, dtypes[value["dtype"]]).reshape(value["shape"]).copy()


def _encode(array: Any) -> dict[str, Any]:
    data = np.require(np.asarray(array, "<f4"), requirements="C")
    return {"dtype": "float32", "shape": list(data.shape), "data": base64.b64encode(data).decode()}


def _record(record: Any) -> dict[str, Any]:
    return {
        "instrument": f"the served port's: {record.instrument}",
        "saved": [
            {"shape": list(t.shape), "dtype": t.dtype, "origin": t.origin, "note": t.note,
             "role": t.role, "memory_space": t.memory_space}
            for t in record.saved
        ],
        "recomputed": dict(record.recomputed),
        "checkpoint_regions": record.checkpoint_regions,
        "backward_matmuls": record.backward_matmuls,
        "forward_matmuls": record.forward_matmuls,
    }  # fmt: skip


def serve(name: str, served: str, ignore_policy: bool, values_unchecked: bool = False) -> None:
    port = implementations.load(served)

    def checkpoint(request: dict[str, Any]) -> Any:
        if ignore_policy or "policy" not in request:
            return bool(request.get("checkpoint"))
        if "nesting" in request:  # protocol 3: full remat, composed
            return composition.Nesting(request["nesting"])
        return Policy.parse(request["policy"])

    def params(value: dict[str, Any]) -> Params:
        return Params(**{k: _array(value[k]) for k in ("w1", "b1", "w2", "b2")})

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "hello":
            offered = request.get("protocols") or [request.get("protocol")]
            protocol = 3 if 3 in offered and not ignore_policy else 2
            nested = {
                "compositions": composition.declared(port),
                "not_composable": composition.not_composable(port),
            } if protocol == 3 else {}  # fmt: skip
            return {
                "name": name, "framework": port.framework, "versions": port.versions(),
                "protocol": protocol, "checkpoint_api": f"{served}, served over the protocol",
                "policies": declared(port), "inexpressible": inexpressible(port),
                "instrument_family": policy_expectations.family(port), **nested,
            }  # fmt: skip
        if op == "init_params":
            seed, features = (
                _integer(request["seed"], "seed"),
                _integer(request["features"], "features"),
            )
            dim = _integer(request["dim"], "dim")
            with byte_budget(int(request["max_bytes"])):
                made = port.init_params(seed, dim, features)
            return {"params": {k: _encode(v) for k, v in made.as_dict().items()}}
        if op in ("forward", "vjp") or (op == "evidence" and request.get("of") == "vjp"):
            p, x = params(request["params"]), _array(request["x"])
            # --values-without-checkpoint: the values off another path than the evidence's.
            values_path = False if values_unchecked else checkpoint(request)
            if op == "forward":
                return {"y": _encode(port.forward(p, x, checkpoint=values_path))}
            if op == "vjp":
                grads = port.vjp(p, x, _array(request["cotangent"]), checkpoint=values_path)
                return {k: _encode(v) for k, v in grads.as_dict().items()}
            return _record(port.backward_record(p, x, checkpoint=checkpoint(request)))
        if op in ("nn_checkpoint_forward", "evidence"):
            seed, features = (
                _integer(request["seed"], "seed"),
                _integer(request["features"], "features"),
            )
            x = _array(request["x"]) if isinstance(request.get("x"), dict) else request.get("x")
            with byte_budget(int(request["max_bytes"])):
                if op == "evidence":
                    return _record(port.exercise_record(seed, x, features))
                if values_unchecked:
                    made = port.init_params(seed, np.size(x), features)
                    return {"y": _encode(port.forward(made, x, checkpoint=False))}
                return {"y": _encode(port.to_numpy(port.nn_checkpoint_forward(seed, x, features)))}
        if op == "shutdown":
            return {}
        raise LookupError(f"unknown op {op!r}")

    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            reply = {"id": request.get("id"), "result": answer(request)}
        except Exception as error:  # the contract's errors by type; anything else is the port's
            kind = type(error).__name__
            kind = (
                kind if kind in ("ValueError", "TypeError", "SizeLimitError") else "InternalError"
            )
            reply = {"id": request.get("id"), "error": {"type": kind, "message": str(error)}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if request.get("op") == "shutdown":
            return


if __name__ == "__main__":
    options = dict(a.lstrip("-").partition("=")[::2] for a in sys.argv[1:])
    serve(
        options["name"],
        options["serve"],
        "ignore-policy" in options,
        "values-without-checkpoint" in options,
    )
