"""Run inside a sweep's venv, one process per framework: the policy cells, or a degradation.

    python -m conformance.versions.probe policies --out FILE [--canonical] [--references FILE]
                                                  --port NAME ...
    python -m conformance.versions.probe degradation --probe MODULE:FUNCTION --out FILE

`policies` measures each port under every remat policy of the vocabulary, as `compare`'s
policy matrix does (`comparison.policy_matrix.measure`: expressible or not, agreement with
the canonical port under the same policy, whether its instrument shows what its stack
declares), on one small shape. With `--canonical` it also computes the canonical port's
references and writes them to `--references`; without, it reads them there (the canonical's
process runs first). `degradation` runs one documented degradation's probe
(`implementations.expectations.Degradation.probe`): `{"holds": bool, "seen": str}`.
Either writes JSON to `--out`; a failure is written there too, as `"error"`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np

import implementations
from implementations import PortUnavailable, manifests
from implementations.stacks.numpy import canonical_params

from ..comparison import policy_matrix
from ..jsonable import dumps
from ..running import environment

SEED, DIM, FEATURES = 0, 8, 8


def _inputs() -> tuple[Any, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal(DIM).astype(np.float32)
    cotangent = rng.standard_normal(FEATURES).astype(np.float32)
    return canonical_params(SEED, DIM, FEATURES), x, cotangent


def _save(references: dict[str, dict[str, Any]], path: Path) -> None:
    arrays = {}
    for label, found in references.items():
        arrays[f"{label}|output"] = np.asarray(found["output"])
        for name, grad in found["grads"].items():
            arrays[f"{label}|grads|{name}"] = np.asarray(grad)
    with open(path, "wb") as file:
        np.savez(file, **arrays)


def _load(path: Path) -> dict[str, dict[str, Any]]:
    references: dict[str, dict[str, Any]] = {}
    with np.load(path) as arrays:
        for key in arrays.files:
            label, kind, *name = key.split("|")
            found = references.setdefault(label, {"output": None, "grads": {}})
            if kind == "output":
                found["output"] = arrays[key]
            else:
                found["grads"][name[0]] = arrays[key]
    return references


def policies(ports: list[str], references_path: Path, canonical: bool) -> dict[str, Any]:
    environment.prepare()
    params, x, cotangent = _inputs()
    result: dict[str, Any] = {"canonical": {}, "ports": {}, "shape": [DIM, FEATURES]}
    references = None
    if canonical:
        try:
            port = implementations.load(implementations.CANONICAL)
            port.pin_matmul_precision()
            references = policy_matrix.references(port, params, x, cotangent)
            _save(references, references_path)
            result["canonical"] = {"state": "available"}
        except Exception as error:
            result["canonical"] = {"state": "broken", "reason": _said(error)}
    elif references_path.is_file():
        references = _load(references_path)
    for name in ports:
        try:
            port = implementations.load(name)
            port.pin_matmul_precision()
        except PortUnavailable as error:
            state = "unavailable" if error.missing else "broken"
            result["ports"][name] = {"state": state, "reason": error.reason}
            continue
        except Exception as error:
            result["ports"][name] = {"state": "broken", "reason": _said(error)}
            continue
        if references is None:
            result["ports"][name] = {
                "state": "available",
                "reason": "no references: the canonical port did not load",
            }
            continue
        cells = policy_matrix.measure(port, references, params, x, cotangent)
        result["ports"][name] = {
            "state": "available",
            "cells": [dataclasses.asdict(cell) for cell in cells],
            "failed": [cell.policy for cell in cells if policy_matrix.failed(cell)],
        }
    return result


def degradation(probe: str) -> dict[str, Any]:
    holds, seen = manifests.resolve(probe)()
    return {"holds": bool(holds), "seen": str(seen)}


def _said(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.versions.probe")
    commands = parser.add_subparsers(dest="command", required=True)
    cells = commands.add_parser("policies")
    cells.add_argument("--port", action="append", default=[])
    cells.add_argument("--references", type=Path, required=True)
    cells.add_argument("--canonical", action="store_true")
    cells.add_argument("--out", type=Path, required=True)
    degraded = commands.add_parser("degradation")
    degraded.add_argument("--probe", required=True)
    degraded.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "policies":
            result = policies(args.port, args.references, args.canonical)
        else:
            result = degradation(args.probe)
    except Exception as error:
        traceback.print_exc()
        result = {"error": _said(error)}

    args.out.write_text(dumps(result) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
