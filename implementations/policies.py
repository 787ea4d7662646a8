"""Remat policies: what a checkpointed block keeps for the backward pass. Imports numpy only.

Public porting API (docs/PORTING.md, "Remat policies"). The vocabulary names
the MLP's tensors by **role**:

    x -> d1 = x @ W1 -> h = d1 + b1 -> a = relu(h) -> y = a @ W2 + b2

(`mask`: relu's boolean or 0/1 mask.) A policy says which of them the
forward pass keeps; every other one the backward pass recomputes.

- `none`: no remat, the block keeps what plain autodiff keeps.
- `full`: full remat, the block keeps its inputs only (x).
- `save_dots`: keeps the matmul outputs (d1; a fused addmm can keep only h).
- `save_named`: keeps the tensor tagged by name, the first layer's output h.
- `offload_dots`: as `save_dots`, with the residual moved to host memory.
- `budget(b)`: the framework chooses under a memory budget, a fraction
  `b` in [0, 1] of what no remat would keep (0: full remat).

The contract's `checkpoint=` keyword takes `True` (= `FULL`), `False`
(= `NONE`) or a `Policy`. `bool(policy)` is False for `none` only, so a port
written before policies existed runs `NONE` plain and every other policy as
full remat: the silent failure that property (j) catches.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

POLICY_NAMES = ("none", "full", "save_dots", "save_named", "offload_dots", "budget")
#: The MLP's tensors by role (see the module docstring).
ROLES = ("x", "d1", "h", "a", "mask", "y")
#: The name `save_named` tags h with, in frameworks that tag by name.
SAVED_NAME = "h"
#: The policies every port declares.
REQUIRED = ("none", "full")

_BUDGET = re.compile(r"^budget\((?P<fraction>[^()]*)\)$")


@dataclass(frozen=True)
class Policy:
    """A remat policy: one of `POLICY_NAMES`, and for `budget` the fraction `budget` in [0, 1].

    `Policy.parse("save_dots")`, `Policy.parse("budget(0.5)")`. Errors name the argument.
    """

    name: str
    budget: float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or self.name not in POLICY_NAMES:
            raise ValueError(f"policy name must be one of {POLICY_NAMES}, got {self.name!r}")
        if self.name != "budget":
            if self.budget is not None:
                raise ValueError(
                    f"budget is only for the 'budget' policy, not {self.name!r} "
                    f"(got budget={self.budget!r})"
                )
            return
        object.__setattr__(self, "budget", _fraction(self.budget))

    @classmethod
    def parse(cls, text: Any) -> Policy:
        """A policy from its spelling: a name, or `budget(<fraction>)`."""
        if isinstance(text, Policy):
            return text
        if not isinstance(text, str):
            raise TypeError(f"policy must be a string such as 'save_dots', got {text!r}")
        spelled = text.strip()
        match = _BUDGET.match(spelled)
        if match:
            raw = match["fraction"].strip()
            try:
                fraction = float(raw)
            except ValueError:
                raise ValueError(
                    f"policy {text!r}: budget must be a number in [0, 1], got {raw!r}"
                ) from None
            return cls("budget", fraction)
        if spelled == "budget":
            raise ValueError("policy 'budget' needs its fraction: budget(<b>), b in [0, 1]")
        if spelled not in POLICY_NAMES:
            raise ValueError(
                f"policy must be one of {', '.join(POLICY_NAMES[:-1])} or budget(<b>), got {text!r}"
            )
        return cls(spelled)

    @property
    def label(self) -> str:
        """The policy as it is spelled: `save_dots`, `budget(0.5)`."""
        return self.name if self.budget is None else f"budget({self.budget:g})"

    def __bool__(self) -> bool:
        # A port that tests `if checkpoint:` runs NONE plain and anything else as full remat.
        return self.name != "none"

    def __str__(self) -> str:
        return self.label


NONE = Policy("none")
FULL = Policy("full")


def _fraction(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"budget must be a number in [0, 1], got {value!r}")
    value = float(value)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"budget must be a fraction in [0, 1], got {value!r}")
    return value


def as_policy(checkpoint: Any) -> Policy:
    """The contract's `checkpoint=` argument as a Policy: True is FULL, False is NONE."""
    if isinstance(checkpoint, Policy):
        return checkpoint
    if isinstance(checkpoint, bool):
        return FULL if checkpoint else NONE
    try:  # numpy's bool_, and 0-d arrays that are one
        import numpy as np

        if isinstance(checkpoint, np.bool_):
            return FULL if bool(checkpoint) else NONE
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    raise TypeError(
        f"checkpoint must be True, False or an implementations.policies.Policy, "
        f"got {type(checkpoint).__name__}: {checkpoint!r}"
    )


def declared_policy(
    checkpoint: Any, port: str, policies: Any, inexpressible: Mapping[str, str]
) -> Policy:
    """`checkpoint=` as a Policy the port `port` declares (in `policies`); `ValueError`
    naming `checkpoint` for one it cannot express, with the reason it declared."""
    policy = as_policy(checkpoint)
    if policy.name not in policies:
        reason = inexpressible.get(policy.name, "not declared")
        raise ValueError(f"checkpoint={policy.label}: port {port} cannot express it ({reason})")
    return policy


def check_declaration(owner: str, policies: Any, inexpressible: Any) -> None:
    """Raise `TypeError` naming `owner` unless `policies` and `inexpressible` are
    mappings of policy name to a non-empty string that cover `POLICY_NAMES` exactly
    once, with `none` and `full` in `policies`."""
    for attr, value in (("policies", policies), ("inexpressible", inexpressible)):
        if not isinstance(value, Mapping):
            raise TypeError(
                f"{owner}: {attr} must be a dict of policy name -> string, "
                f"got {type(value).__name__}"
            )
        for name, text in value.items():
            if name not in POLICY_NAMES:
                raise TypeError(
                    f"{owner}: {attr} names {name!r}, not a policy (known: {POLICY_NAMES})"
                )
            if not isinstance(text, str) or not text.strip():
                what = "native spelling" if attr == "policies" else "one-line reason"
                raise TypeError(f"{owner}: {attr}[{name!r}] must be a non-empty {what}")
            if attr == "inexpressible" and "\n" in text.strip():
                raise TypeError(f"{owner}: inexpressible[{name!r}] must be one line")
    both = sorted(set(policies) & set(inexpressible))
    if both:
        raise TypeError(f"{owner}: {', '.join(both)} both in policies and in inexpressible")
    missing_required = [name for name in REQUIRED if name not in policies]
    if missing_required:
        raise TypeError(
            f"{owner}: policies must declare {' and '.join(missing_required)} "
            "(every port expresses none and full)"
        )
    missing = [name for name in POLICY_NAMES if name not in policies and name not in inexpressible]
    if missing:
        raise TypeError(
            f"{owner}: declare {', '.join(missing)} in policies (with its native spelling) "
            "or in inexpressible (with a one-line reason) (see docs/PORTING.md)"
        )


def none_and_full(
    none: str, full: str, *, save_dots: str, save_named: str, offload_dots: str, budget: str
) -> tuple[dict[str, str], dict[str, str]]:
    """`(policies, inexpressible)` of a port that expresses `none` and `full` (their native
    spellings) and no other policy, each with its reason."""
    reasons = {"save_dots": save_dots, "save_named": save_named, "offload_dots": offload_dots}
    return {"none": none, "full": full}, {**reasons, "budget": budget}


def whole_block(
    api: str,
    none: str,
    full: str,
    *,
    keeps: str,
    save_named: str,
    offload_dots: str,
    budget: str = "",
) -> tuple[dict[str, str], dict[str, str]]:
    """`none_and_full` of a port whose checkpoint `api` takes no policy.

    `keeps` says what `api` does instead of a policy's choice (the `save_dots` reason);
    `save_named` and `offload_dots` are the framework's own reasons; `budget` defaults to
    "`api` has no memory budget".
    """
    return none_and_full(
        none,
        full,
        save_dots=f"{api} takes no policy: {keeps}",
        save_named=save_named,
        offload_dots=offload_dots,
        budget=budget or f"{api} has no memory budget",
    )


#: What an `Implementation` that is not a `Port` is taken to declare.
DEFAULT_POLICIES = {"none": "checkpoint=False", "full": "checkpoint=True"}


def declared(port: Any) -> dict[str, str]:
    """The policies `port` (a Port or any Implementation) expresses, name -> native spelling."""
    return dict(getattr(port, "policies", None) or DEFAULT_POLICIES)


def inexpressible(port: Any) -> dict[str, str]:
    """The policies `port` cannot express, name -> reason (the rest, for a non-Port)."""
    found = getattr(port, "inexpressible", None)
    if found is not None and getattr(port, "policies", None):
        return dict(found)
    return {
        name: "not declared (an Implementation that is not a Port expresses none and full)"
        for name in POLICY_NAMES
        if name not in declared(port)
    }
