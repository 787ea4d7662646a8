"""What a stack's bench module offers the bench (`python -m conformance bench`). Imports numpy.

A stack's bench module (named by its manifest's `BenchEntry`) runs L blocks
`Linear -> relu -> Linear` on batch B and width F, on its framework, and offers:

- `FRAMEWORK` (its name in tables) and `versions()`;
- `configurations()`: the `(variant, mode)` pairs it runs (`MODES`);
- `build(variant, mode, data)`: a `Case` on the given `Data`;
- optionally `TIME_TARGET_EVERY_DEPTH`: a time ratio over its own `none` it is
  held to at every depth (the bench's usual target holds at the deepest only);
- for `bench --policies`: `POLICIES`, the policy labels it runs
  (`implementations.policies`), `NOT_EXPRESSIBLE`, policy -> the reason it
  cannot, and optionally `policy_case(policy, data)` (default: its depth
  case for `none` and `full`).

What its instruments measure is described in its manifest's entry (`notes`),
so that the bench's definitions name every stack without loading one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .contract import SavedTensor

#: The depth bench's modes: no checkpoint, a checkpoint per block, and one whose policy saves
#: the matmul outputs (each stack's way: its entry's `notes["save-mm"]`).
MODES = ("none", "full", "save-mm")


@dataclass(frozen=True)
class Data:
    """One depth's data, float32 numpy, canonical layout.

    **Arguments:**

    - `blocks`: per block `(w1 (F, F), b1 (F,), w2 (F, F), b2 (F,))`, kernels `(in, out)`.
    - `x`: the `(B, F)` input.
    - `cotangent`: the `(B, F)` cotangent pulled back from the stack's output.
    """

    blocks: list[tuple[np.ndarray, ...]]
    x: np.ndarray
    cotangent: np.ndarray


@dataclass(frozen=True)
class Static:
    """What one configuration measures once, before timing.

    **Arguments:**

    - `saved`: the residuals, as the framework's instrument lists them.
    - `temp_bytes`, `peak_bytes`, `matmuls`: see the bench's definitions; None
      where the framework cannot measure it.
    """

    saved: tuple[SavedTensor, ...]
    temp_bytes: int | None = None
    peak_bytes: int | None = None
    matmuls: int | None = None


class Case(Protocol):
    """One configuration, built by a stack's bench module for one depth."""

    framework: str
    variant: str  # "unrolled", "scan", or "" where the framework has one way only
    mode: str

    def measure(self) -> Static: ...

    def step(self) -> None:
        """One forward+backward, finished (synchronised) when it returns."""
