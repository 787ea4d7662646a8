"""The labels an op-level instrument gives the values of one watched call. Imports nothing.

- **Origin**: where a value comes from, `input` (x), `constant`, `parameter` or
  `activation`. An op's result takes the strongest origin among its inputs'
  (`stronger`), x counting as an activation once an op has used it (`derived`).
- **Role**: its place in the exercise's block, `x -> d1 -> h -> a -> d2 -> y` (matmul, add
  the bias, relu, matmul, add the bias), read off the op that makes it from the role of what
  it reads (`role_after`). Each instrument names its framework's ops as these steps.
"""

from __future__ import annotations

from collections.abc import Iterable

#: The origins an op can give its result, weakest to strongest.
ORIGINS = ("constant", "parameter", "activation")
#: The block's steps, each with the roles it makes from the role it reads.
_AFTER = {"matmul": {"x": "d1", "a": "d2"}, "add": {"d1": "h", "d2": "y"}}


def derived(origin: str) -> str:
    """The origin of what an op makes from a value of `origin`: x itself makes activations."""
    return "activation" if origin == "input" else origin


def stronger(a: str, b: str) -> str:
    """The stronger of two origins of `ORIGINS`."""
    return a if ORIGINS.index(a) >= ORIGINS.index(b) else b


def role_after(step: str, roles: Iterable[str]) -> str:
    """The role of what the block's `step` ("matmul", "add", "relu"; any other: none) makes
    from inputs of `roles` (the first role known counts); "" where it makes none."""
    if step == "relu":  # the block's one relu, whatever made its input
        return "a"
    known = next((r for r in roles if r), "")
    return _AFTER.get(step, {}).get(known, "")
