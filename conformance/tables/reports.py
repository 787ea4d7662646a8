"""The one reader of the JSON reports every command writes: `merge`, `report` and the
renderers read files through it.

- `load`: a file's JSON, or `ReportError` naming the file (unreadable, not UTF-8, not JSON,
  past the bounds: `MAX_BYTES`, `MAX_DEPTH`, `MAX_DIGITS`; NaN and Infinity refused);
- `kind_of`: which command wrote a report (`KINDS`): each names its `kind`; one written before
  reports named it is told by its fields (a run report: `schema` and ports with `outcomes`;
  compare: `canonical`, `ports` and `notes`; bench: `settings` and `results`, `policies` too
  for `bench --policies`, `frontier` for `bench --schedules`; scale: `settings` and `rows`;
  versions: `{"kind": "versions", "rows": [...]}`); a `merge --json` document is none of them;
- `check_run`: a run report of a schema this version reads, its fields checked against the
  writer's own definition (the dataclasses `run --json` is made of: `running.results`), so
  that readers can index it freely; `merge` and `report` both call it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from pathlib import Path
from typing import Any

from ..running.mutation import MutantResult
from ..running.results import SCHEMA, PortReport, SuiteReport
from ..running.runner import STATUSES, Outcome

KINDS = ("run", "compare", "bench", "bench-policies", "bench-schedules", "scale", "versions")
#: The oldest run-report schema read (2: ports, outcomes and "failed" as today; reports
#: without "machine" are merged under "machine not recorded").
OLDEST_SCHEMA = 2
#: A report file's bounds: a forged one is refused by name, never a traceback or a hog.
MAX_BYTES = 512 * 2**20
MAX_DEPTH = 64  # the writer nests 8 deep; JSON deeper than Python's stack raised RecursionError
MAX_DIGITS = 64  # an integer's digits; 5000 raised Python's "Exceeds the limit"
#: The values the writer gives each status field (runner.Outcome, supervisor, mutation).
PORT_STATES = ("available", "unavailable", "broken", "crashed", "timed out", "not run")
MUTANT_STATUSES = ("killed", "survived", "unavailable", "crashed", "timeout")
#: Non-finite floats as the writer spells them (`jsonable.to_data`).
NON_FINITE = ("inf", "-inf", "nan")


class ReportError(ValueError):
    """A report file that cannot be used: the message starts with the file's name."""


def load(path: str | Path) -> Any:
    """The JSON in `path`; `ReportError` naming the file when it is unreadable, not UTF-8,
    not JSON or past the bounds."""
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_BYTES + 1)
    except OSError as error:
        raise ReportError(f"{path}: cannot read it: {error.strerror or error}") from None
    if len(raw) > MAX_BYTES:
        raise ReportError(f"{path}: larger than {MAX_BYTES // 2**20} MiB: not a report")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ReportError(
            f"{path}: not UTF-8 (byte {error.start}: {raw[error.start : error.start + 1]!r}); "
            "reports are written in UTF-8"
        ) from None
    try:
        data = json.loads(
            text, parse_constant=_refuse_constant, parse_int=_bounded_int, parse_float=_finite
        )
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise ReportError(f"{path}: not JSON ({error.msg} at {where})") from None
    except RecursionError:
        raise ReportError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a report") from None
    except _Refused as error:
        raise ReportError(f"{path}: {error}") from None
    if _depth(data) > MAX_DEPTH:
        raise ReportError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a report")
    return data


class _Refused(ValueError):
    """A JSON value `load` refuses (json.loads passes it through from the hooks)."""


def _refuse_constant(name: str) -> Any:
    raise _Refused(f'{name} is not JSON (the writer spells non-finite numbers "inf", "nan")')


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Refused(f"an integer of {len(text)} digits (at most {MAX_DIGITS})")
    return int(text)


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise _Refused(f"the number {text[:20]}... overflows a float (at most 1.8e308)")
    return number


def _depth(data: Any) -> int:
    """How deep `data` nests, counted without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list):
            stack.extend((value, depth + 1) for value in item)
    return deepest


def kind_of(data: Any) -> str | None:
    """One of `KINDS`, or None when `data` is none of them. A report names its own `kind`
    (older ones did not: their fields tell); a named kind its fields contradict is none."""
    if not isinstance(data, dict):
        return None
    found = _shape(data)
    declared = data.get("kind")
    return found if declared is None or declared == found else None


def _shape(data: dict[str, Any]) -> str | None:
    if data.get("kind") == "versions" and isinstance(data.get("rows"), list):
        return "versions"
    if "settings" in data and "results" in data:
        if "frontier" in data:  # bench --schedules: Revolve's frontier beside its results
            return "bench-schedules"
        return "bench-policies" if "policies" in data else "bench"
    if "settings" in data and isinstance(data.get("rows"), list):
        return "scale"
    ports = data.get("ports")
    if not isinstance(ports, list):
        return None
    if "canonical" in data and "notes" in data:
        return "compare"
    if "schema" in data and all(isinstance(p, dict) and "outcomes" in p for p in ports):
        return "run"
    return None


def check_run(data: Any, path: str) -> None:
    """Raise `ReportError` unless `data` is a `run --json` report of a schema merge reads."""
    expected = f"schema {OLDEST_SCHEMA} to {SCHEMA}"
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise ReportError(f"{path}: not a `run --json` report (a JSON {kind}, not an object)")
    if data.get("kind") == "merge":
        raise ReportError(
            f"{path}: a merged matrix (`merge --json`), not a `run --json` report: "
            "merge the run reports themselves"
        )
    if "schema" not in data:
        raise ReportError(
            f"{path}: no schema version: not a `run --json` report of remat-conformance "
            f"({expected} expected)"
        )
    schema = data["schema"]
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ReportError(f"{path}: schema must be an integer, got {schema!r} ({expected})")
    if schema > SCHEMA:
        raise ReportError(
            f"{path}: schema {schema} is newer than this remat-conformance reads ({expected}): "
            "merge with the version that wrote it, or upgrade"
        )
    if schema < OLDEST_SCHEMA:
        raise ReportError(
            f"{path}: schema {schema} is older than this remat-conformance reads ({expected}): "
            "run the suite again with this version"
        )
    _check_shape(data, path)


def _check_shape(data: dict[str, Any], path: str) -> None:
    # Every field the writer defines, checked once here so that the rest can index freely;
    # fields it does not define are left alone (older reports lack some: they are optional).
    _check_fields(data, SuiteReport, path, _RUN_EXTRAS)
    if not isinstance(data.get("failed"), bool):
        raise ReportError(f"{path}: 'failed' must be true or false")
    if not isinstance(data.get("machine", {}), dict):
        raise ReportError(f"{path}: 'machine' must be an object")
    for index, mutant in enumerate(data.get("mutants") or []):
        where = f"{path}: mutants[{index}]"
        if not isinstance(mutant, dict) or "status" not in mutant:
            raise ReportError(
                f"{where}: 'mutants' must be null or a list of objects with a 'status'"
            )
        _check_fields(mutant, MutantResult, where)
        _check_value(mutant["status"], MUTANT_STATUSES, f"{where}.status")
    for index, port in enumerate(data["ports"]):
        where = f"{path}: ports[{index}]"
        if not isinstance(port, dict) or not isinstance(port.get("name"), str):
            raise ReportError(f"{where} must be an object with a 'name'")
        where = f"{where} ({port['name']})"
        if not isinstance(port.get("outcomes"), list):
            raise ReportError(f"{where}: 'outcomes' must be a list")
        _check_fields(port, PortReport, where)
        _check_value(port.get("state", "available"), PORT_STATES, f"{where}.state")
        for number, outcome in enumerate(port["outcomes"]):
            if not (
                isinstance(outcome, dict)
                and isinstance(outcome.get("property"), str)
                and isinstance(outcome.get("status"), str)
            ):
                raise ReportError(f"{where}: every outcome needs a 'property' and a 'status'")
            place = f"{where}.outcomes[{number}] ({outcome['property']})"
            _check_fields(outcome, Outcome, place, {"replay": str})
            _check_value(outcome["status"], STATUSES, f"{place}.status")


#: What `results.to_json` adds to `SuiteReport`'s own fields.
_RUN_EXTRAS = {
    "kind": str,
    "schema": int,
    "machine": dict,
    "failed": bool,
    "mutation_score": dict[str, int],
    "properties": dict[str, str],
}


def _check_value(value: str, known: tuple[str, ...], where: str) -> None:
    if value not in known:
        raise ReportError(f"{where}: {value!r} is not one of {', '.join(known)}")


def _check_fields(data: dict[str, Any], cls: type, where: str, extras: dict | None = None) -> None:
    """Each field of `data` that `cls` (a writer's dataclass) or `extras` defines holds a value
    of its declared type; nested dataclasses are the caller's to check."""
    for name, kind in (_declared(cls) | (extras or {})).items():
        if name in data and not _fits(data[name], kind):
            raise ReportError(
                f"{where}.{name}: {_describe(data[name])} where the writer puts {_name(kind)}"
            )


@functools.cache
def _declared(cls: type) -> dict[str, Any]:
    """A writer's dataclass's fields and their types (resolved once: it is slow)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _fits(value: Any, kind: Any) -> bool:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, option) for option in typing.get_args(kind))
    if kind is Any:
        return True
    if kind is type(None):
        return value is None
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:  # an int is a float in JSON; non-finite ones are strings
        return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
            value in NON_FINITE
        )
    if kind is str:
        return isinstance(value, str)
    if kind is dict or origin is dict:
        args = typing.get_args(kind)
        return isinstance(value, dict) and (
            not args or all(_fits(item, args[1]) for item in value.values())
        )
    if kind is list or origin is list:
        args = typing.get_args(kind)
        element = args[0] if args else Any
        if dataclasses.is_dataclass(element):
            element = dict  # its own fields: the caller's
        return isinstance(value, list) and all(_fits(item, element) for item in value)
    return True  # a type the JSON does not carry as such


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) if not typing.get_args(kind) else str(kind)


def _describe(value: Any) -> str:
    text = json.dumps(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"
