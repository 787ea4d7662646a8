"""Composed checkpoint regions: what a framework does when remat is applied twice. Imports
nothing.

Public porting API (docs/PORTING.md, "Composition"). The exercise ends on a claim: nested
regions can express different schedules, and wrapping the same region again is not a recipe
for saving more memory. Property (k) checks it, per port, in three cases:

- `once`: the port's region alone, full remat (the baseline the others are held to);
- `twice`: the same region wrapped twice with the port's own API
  (`nn.checkpoint(nn.checkpoint(MLP))`, `checkpoint(lambda y: checkpoint(f, y), x)`, ...);
- `under_trainer`: the port's region inside an outer region over the whole model call, as a
  training loop's activation checkpointing adds on top of a model library's.

The contract's `checkpoint=` takes a `Nesting(case)`: a port that declares the case (in
`compositions`, case -> native spelling; the rest in `not_composable`, case -> reason) runs
its full-remat region so composed. What its instrument must show is its stack's declaration
(`Composed`, in the stack folder's `expectations.py`): the kept roles, the forward pass's
matmuls, and the forward matmuls the backward pass runs again (its matmuls beyond the
gradient's own, which the `none` run of the same port counts). `contradictions` holds a
declaration to the rules before it is used:

- wrapping again never saves less than wrapping once;
- it never runs the forward fewer times (in the forward pass, or again in the backward);
- `once` is full remat: it keeps x only.

A framework that spends an extra forward for nothing is a *documented degradation*
(`Composed.degradation`, with its upstream reference), not a failure; one whose nesting
changes the values, or silently drops the inner region, fails (k).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The composition cases, baseline first.
CASES = ("once", "twice", "under_trainer")
#: The cases with more than one region.
NESTED = ("twice", "under_trainer")
#: What each case is, for tables and messages.
MEANING = {
    "once": "the port's region alone (full remat)",
    "twice": "the same region wrapped twice with the port's own API",
    "under_trainer": "the port's region inside an outer region over the whole model call",
}


@dataclass(frozen=True)
class Nesting:
    """`checkpoint=` for a composition case: full-remat regions, composed as `case` says."""

    case: str

    def __post_init__(self):
        if self.case not in CASES:
            raise ValueError(f"nesting case must be one of {CASES}, got {self.case!r}")

    @property
    def label(self) -> str:
        return self.case

    def __bool__(self) -> bool:  # a port written before nesting existed runs it as a checkpoint
        return True


def case_of(checkpoint: Any) -> str:
    """The composition case `checkpoint=` asks for: "once" for anything but a `Nesting`."""
    return checkpoint.case if isinstance(checkpoint, Nesting) else "once"


@dataclass(frozen=True)
class Composed:
    """What a stack's instrument shows under one composition case.

    - `roles`: the kept tensors by role (as `implementations.policies.ROLES`).
    - `forward_matmuls`: the matmuls the forward pass runs.
    - `rerun_matmuls`: the forward matmuls the backward pass runs again (its matmuls beyond
      the gradient's own); None where the stack's instrument cannot count them.
    - `why`: one line, citing the upstream source of the behaviour.
    - `degradation`: the case spends forward work for nothing, upstream's doing (documented,
      not a failure).
    """

    roles: frozenset[str]
    forward_matmuls: int | None
    rerun_matmuls: int | None
    why: str
    degradation: bool = False

    @property
    def forward_runs(self) -> int | None:
        """The forward matmuls run in all, in the forward pass and again in the backward."""
        if self.forward_matmuls is None or self.rerun_matmuls is None:
            return None
        return self.forward_matmuls + self.rerun_matmuls


def composed(
    roles: str, forward: int | None, rerun: int | None, why: str, degradation: bool = False
) -> Composed:
    """A `Composed` from space-separated roles: `composed("x", 2, 1, why="...")`."""
    return Composed(frozenset(roles.split()), forward, rerun, why, degradation)


def whole_rerun(once: str, twice: str, under_trainer: str) -> dict[str, Composed]:
    """The count model of a checkpoint that keeps the region's input `x` and reruns all of it
    in backward (autograd, DeepSpeed, MindSpore, Paddle, TensorFlow), each case's `why` its
    framework's: `once`, the 2 forward matmuls and both again; `twice` and `under_trainer`,
    the outer rerun runs the inner checkpoint's forward (2 matmuls nothing reads) and the
    inner's backward reruns the block again, 4 in all (a degradation: no early stop)."""
    return {
        "once": composed("x", 2, 2, why=once),
        "twice": composed("x", 2, 4, why=twice, degradation=True),
        "under_trainer": composed("x", 2, 4, why=under_trainer, degradation=True),
    }


def wrapped(wrapper: str) -> dict[str, str]:
    """The compositions (case -> native spelling) of a checkpoint that wraps a function,
    spelled `wrapper` with `{}` for what it wraps (`"tf.recompute_grad({})"`): around the
    block, around itself around the block, and around a model call that runs it."""
    once = wrapper.format("block")
    return {
        "once": once,
        "twice": wrapper.format(once),
        "under_trainer": f"{wrapper.format('model call')} around a model whose call runs {once}",
    }


def check_declaration(owner: str, compositions: Any, not_composable: Any) -> None:
    """Raise `TypeError` naming `owner` unless `compositions` (case -> native spelling) and
    `not_composable` (case -> one-line reason) are mappings that cover `CASES` at most once,
    with `once` expressed wherever a nested case is."""
    for attr, value in (("compositions", compositions), ("not_composable", not_composable)):
        if not isinstance(value, Mapping):
            raise TypeError(f"{owner}: {attr} must be a dict of case -> string")
        for case, text in value.items():
            if case not in CASES:
                raise TypeError(f"{owner}: {attr} names {case!r}, not a case (known: {CASES})")
            if not isinstance(text, str) or not text.strip() or "\n" in text.strip():
                raise TypeError(f"{owner}: {attr}[{case!r}] must be one non-empty line")
    both = sorted(set(compositions) & set(not_composable))
    if both:
        raise TypeError(f"{owner}: {', '.join(both)} both in compositions and not_composable")
    if set(compositions) & set(NESTED) and "once" not in compositions:
        raise TypeError(f"{owner}: a nested case is held to 'once', which it must express too")


def declared(port: Any) -> dict[str, str]:
    """The cases `port` expresses, case -> native spelling ({}: none declared)."""
    return dict(getattr(port, "compositions", None) or {})


def not_composable(port: Any) -> dict[str, str]:
    """The cases `port` cannot express, case -> reason (undeclared ones say so)."""
    found = dict(getattr(port, "not_composable", None) or {})
    expressed = declared(port)
    for case in CASES:
        if case not in expressed and case not in found:
            found[case] = "not declared (docs/PORTING.md, Composition)"
    return found


def _listed(roles: frozenset[str]) -> str:
    return "{" + ", ".join(sorted(roles)) + "}"


def contradictions(table: Mapping[str, Any]) -> list[str]:
    """What in `table` (case -> `Composed`) breaks the composition rules, one line each, each
    naming its rule; `[]` when nothing does."""
    problems = []
    for case, entry in table.items():
        if case not in CASES:
            problems.append(f"{case!r} is not a composition case ({', '.join(CASES)})")
        elif not isinstance(entry, Composed):
            problems.append(f"{case}: not a Composed record ({type(entry).__name__})")
        elif not isinstance(entry.why, str) or not entry.why.strip() or "\n" in entry.why:
            problems.append(f"{case}: needs its reason, one line citing upstream (why)")
    once = table.get("once")
    if isinstance(once, Composed) and once.roles != frozenset({"x"}):
        problems.append(
            f"rule 'once is full remat': once keeps {_listed(once.roles)}, not the block's "
            "inputs {x}"
        )
    for case in NESTED:
        nested = table.get(case)
        if not (isinstance(once, Composed) and isinstance(nested, Composed)):
            continue
        if not once.roles <= nested.roles:
            problems.append(
                f"rule 'wrapping again never saves less': {case} keeps {_listed(nested.roles)}, "
                f"less than once's {_listed(once.roles)}"
            )
        theirs, ours = nested.forward_runs, once.forward_runs
        if theirs is not None and ours is not None and theirs < ours:
            problems.append(
                f"rule 'wrapping again never runs the forward fewer times': {case} runs "
                f"{theirs} forward matmuls in all (forward pass and again in backward), "
                f"once {ours}"
            )
    return problems
