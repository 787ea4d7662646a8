"""What an evidence instrument must show under each remat policy. Imports nothing.

Each stack declares its expectations in its folder (`expectations.py`, named
by its manifest): per **instrument family** (a stack's name, or the name a
port's manifest entry gives, such as `torch_compile`), per policy, an
`Expected` record with a one-line reason. The sets are read off measured
tables and the frameworks' documented behaviour, never computed by the code
under test. Where frameworks legitimately differ, the difference is written
there once, with its reason; it is never a looser check.

**A port may declare its own** (an outside framework the suite knows nothing
of): a Python port class sets `instrument_family` and `expectations` (policy
label -> `Expected`, made with `expect`), a process port sends the same in
its `hello` (docs/PROTOCOL.md, *Expectations*; `from_wire` reads them).
Whoever declares a table, `contradictions` holds it to the policy vocabulary
(`implementations.policies`): full keeps the block's inputs only, none keeps
more than full, save_named keeps the named tensor, offload_dots keeps
something on the host, and so on. A declaration that contradicts it fails
property (j) for a port, and the suite's own tables are tested the same way.

**Documented degradations** are upstream behaviours that users walk into,
pinned with the upstream versions they were measured on. Each has a probe
that says whether it still shows, which a test runs (it fails the day
upstream changes) and the version sweep runs at every version it installs
(`python -m conformance versions`); reports show them as *documented
degradation*, never as a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The reason an instrument that counts no backward matmuls gives.
NOT_COUNTED = "this stack's instrument does not count backward matmuls"


@dataclass(frozen=True)
class Expected:
    """What a stack's instrument shows under one policy.

    - `roles`: the kept tensors by role (x, d1, h, a, mask, y).
    - `backward_matmuls`: the matmuls of the backward pass, recomputed ones
      included; None where the stack's instrument does not count them (`why`).
    - `host`: roles kept in host memory (offload).
    - `why`: the per-stack equivalence or gap, in one line.
    """

    roles: frozenset[str]
    backward_matmuls: int | None
    host: frozenset[str] = frozenset()
    why: str = ""


def expect(roles: str, matmuls: int | None, host: str = "", why: str = "") -> Expected:
    """An `Expected` from space-separated role names: `expect("x a", 4, why=...)`."""
    return Expected(frozenset(roles.split()), matmuls, frozenset(host.split()), why)


def uncounted(plain_roles: str, plain_why: str, full_why: str) -> dict[str, Expected]:
    """`none` and `full` where the instrument counts no backward matmuls (`NOT_COUNTED`) and
    the checkpoint keeps the region's input `x` alone: MindSpore, Paddle, MLX, TensorFlow."""
    return {
        "none": expect(plain_roles, None, why=f"{plain_why}; {NOT_COUNTED}"),
        "full": expect("x", None, why=f"{full_why}; {NOT_COUNTED}"),
    }


@dataclass(frozen=True)
class Degradation:
    """An upstream behaviour that silently does less (or more) than the policy says.

    - `family`: the instrument family (or stack) it concerns; `policy`: the policy name.
    - `what`: one line for reports; `short`: a few words for tables.
    - `measured`: the upstream distribution and the versions it was measured on.
    - `probe`: `"module:function"`, a check run where the framework is installed that
      returns `(holds, seen)`: whether the degradation still shows, and what was seen, in a
      line. The version sweep runs it at every version (`conformance.versions`); a test pins it.
    """

    family: str
    policy: str
    what: str
    measured: str
    short: str = ""
    probe: str = ""


#: An entry: the record, or a function of (dim, features) giving it where the
#: framework's choice depends on the sizes.
Entry = Expected | Callable[[int | None, int | None], Expected]


@dataclass(frozen=True)
class Expectations:
    """One stack's declaration: `families` (family -> policy label or name -> `Entry`), its
    documented `degradations`, and `compositions` (family -> composition case ->
    `implementations.composition.Composed`: what its instrument shows when its region is
    wrapped twice or under a trainer's) and `stateful` (port -> variant -> what the block with
    dropout and BatchNorm does under its checkpoint, `implementations.stateful`)."""

    families: Mapping[str, Mapping[str, Entry]] = field(default_factory=dict)
    degradations: tuple[Degradation, ...] = ()
    compositions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The block with variables and RNGs (property (l)): port -> API variant ->
    #: `implementations.stateful.StateDeclaration`.
    stateful: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


#: The MLP's tensors by role (as `implementations.policies.ROLES`; this module imports nothing).
_ROLES = ("x", "d1", "h", "a", "mask", "y")
_POLICIES = ("none", "full", "save_dots", "save_named", "offload_dots")
#: The roles a matmul writes: d1 = x @ W1, or h where the bias is fused into it (addmm).
_DOTS = frozenset({"d1", "h"})


def _is_label(label: str) -> bool:
    if label in _POLICIES:
        return True
    if not (label.startswith("budget(") and label.endswith(")")):
        return False
    try:
        fraction = float(label[len("budget(") : -1])
    except ValueError:
        return False
    return 0.0 <= fraction <= 1.0


def _listed(roles: frozenset[str]) -> str:
    return "{" + ", ".join(sorted(roles)) + "}"


def contradictions(
    table: Mapping[str, Any], features: tuple[int | None, ...] = (None,)
) -> list[str]:
    """What in `table` (policy label -> `Expected`, or a function of (dim, features) giving
    one) contradicts the policy vocabulary, one line each; `[]` when nothing does.

    A function is called at each `(dim, features)` of `features` (the sizes (j) draws)."""
    problems: list[str] = []
    sizes = [size if isinstance(size, tuple) else (None, size) for size in features]
    for label, entry in table.items():
        if not isinstance(label, str) or not _is_label(label):
            problems.append(f"{label!r} is not a policy (none, full, save_dots, save_named, "
                            "offload_dots, budget(<b>))")  # fmt: skip
            continue
        for dim, width in sizes:
            found = entry(dim, width) if callable(entry) else entry
            if not isinstance(found, Expected):
                problems.append(f"{label}: not an Expected record ({type(found).__name__})")
                break
            problems += [f"{label}: {p}" for p in _entry_problems(label, found)]
    for dim, width in sizes:
        problems += _pair_problems(table, dim, width)
    return list(dict.fromkeys(problems))


def _entry_problems(label: str, found: Expected) -> list[str]:
    roles, host = found.roles, found.host
    problems = []
    unknown = sorted((roles | host) - set(_ROLES))
    if unknown:
        problems.append(f"names {', '.join(unknown)}, not a role ({', '.join(_ROLES)})")
    if not isinstance(found.why, str) or not found.why.strip() or "\n" in found.why.strip():
        problems.append("needs its reason, one line (why)")
    matmuls = found.backward_matmuls
    if matmuls is not None and (isinstance(matmuls, bool) or not isinstance(matmuls, int)
                                or matmuls < 0):  # fmt: skip
        problems.append(f"backward_matmuls must be a count or null, got {matmuls!r}")
    if host - roles:
        problems.append(f"keeps {_listed(host - roles)} on the host without keeping it")
    name = label.split("(")[0]
    if label in ("full", "budget(0)") and roles - {"x"}:
        problems.append(
            f"keeps {_listed(roles)}: more than the block's inputs {{x}} (full remat keeps x "
            "and recomputes the rest)"
        )
    if label in ("none", "full", "save_dots", "save_named", "budget(0)") and host:
        problems.append(f"keeps {_listed(host)} on the host: only offload_dots moves to the host")
    if name == "none" and not roles - {"x"}:
        problems.append(
            f"keeps {_listed(roles)}: no activation, as little as full remat (without remat "
            "the backward pass reads what the forward pass computed)"
        )
    if name in ("save_dots", "offload_dots") and not roles & _DOTS:
        problems.append(f"keeps {_listed(roles)}: no matmul output (d1, or h where the bias "
                        "is fused)")  # fmt: skip
    if name == "save_named" and "h" not in roles:
        problems.append(f"keeps {_listed(roles)}: not the named tensor h")
    if name == "offload_dots" and not host:
        problems.append("keeps nothing on the host (host is empty)")
    return problems


def _pair_problems(table: Mapping[str, Any], dim: int | None, features: int | None) -> list[str]:
    def at(label: str) -> Expected | None:
        entry = table.get(label)
        found = entry(dim, features) if callable(entry) else entry
        return found if isinstance(found, Expected) else None

    none, full = at("none"), at("full")
    if none is None or full is None:
        return []
    problems = []
    if not full.roles <= none.roles:
        problems.append(
            f"none keeps {_listed(none.roles)}, less than full's "
            f"{_listed(full.roles)} (no remat keeps every input full remat keeps)"
        )
    if (
        isinstance(none.backward_matmuls, int)
        and isinstance(full.backward_matmuls, int)
        and full.backward_matmuls <= none.backward_matmuls
    ):
        problems.append(
            f"full runs {full.backward_matmuls} backward matmuls, none "
            f"{none.backward_matmuls}: full remat reruns at least the first layer's matmul"
        )
    return problems


def from_wire(data: Any) -> dict[str, Expected]:
    """A process port's `expectations` from its `hello` (docs/PROTOCOL.md): policy label ->
    `{"roles": [...], "backward_matmuls": n or null, "host": [...], "why": "..."}`.
    Raises `ValueError` naming what is malformed (its meaning is `contradictions`' to judge)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"'expectations' must be an object, got {type(data).__name__}")
    table = {}
    for label, item in data.items():
        if not isinstance(item, Mapping):
            raise ValueError(f"expectations[{label!r}] must be an object")
        unknown = sorted(set(item) - {"roles", "backward_matmuls", "host", "why"})
        if unknown:
            raise ValueError(f"expectations[{label!r}] has unknown keys {unknown}")
        lists = {}
        for key in ("roles", "host"):
            value = item.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"expectations[{label!r}].{key} must be a list of role names")
            lists[key] = frozenset(value)
        if "roles" not in item:
            raise ValueError(f"expectations[{label!r}] has no 'roles'")
        matmuls = item.get("backward_matmuls")
        if matmuls is not None and (isinstance(matmuls, bool) or not isinstance(matmuls, int)):
            raise ValueError(f"expectations[{label!r}].backward_matmuls must be an integer or null")
        why = item.get("why", "")
        if not isinstance(why, str):
            raise ValueError(f"expectations[{label!r}].why must be a string")
        table[str(label)] = Expected(lists["roles"], matmuls, lists["host"], why)
    return table
