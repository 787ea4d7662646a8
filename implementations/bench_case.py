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

For `bench --schedules` (`implementations.schedules`, docs/SCHEDULES.md):

- `SCHEDULES`: schedule label or name (`"every"`, `"segments"`, `"nested(8,8)"`) -> one line
  saying how it builds it with its own API; a bare name accepts any arguments;
- `SCHEDULES_NOT_EXPRESSIBLE`: schedule name -> a one-line reason;
- optionally `SCHEDULE_DEPARTURES`: schedule label or name -> the known upstream behaviour that
  takes its measured figures outside the model's acceptance, an
  `implementations.schedules.Departure` (which may state its count) or its reason alone
  (else a departure is unexplained, and the checks fail on it);
- `schedule_case(schedule, data) -> ScheduleCase`: the depth-L stack, `L = len(data.blocks)`,
  with its regions where `schedule.placement(L)` puts them, built with the framework's API.
  Its `measure()` gives `ScheduleStatic` from the framework's instruments: forward matmuls
  (x @ W1 and a @ W2; two per block evaluation) executed in the forward pass and in the
  backward pass, and the peak bytes alive during the backward pass with parameters and
  gradients left out, the method named; `values()` gives the output and the parameters'
  gradients in canonical layout; `step()` is timed as the depth bench's.
- the canonical's stack (Flax `nn.remat_scan`) also offers `canonical_values(schedule,
  data)`: the reference every schedule's values are held to.

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


@dataclass(frozen=True)
class ScheduleStatic:
    """What one schedule case measures once, before timing (`bench --schedules`).

    **Arguments:**

    - `forward_matmuls`: `(forward pass, backward pass)`: forward-direction matmuls executed
      (each block evaluation runs two, x @ W1 and a @ W2; a rerun may skip a region's last
      a @ W2, whose output no gradient needs); None where the instrument cannot count.
    - `peak_bytes`: the most bytes alive during the backward pass, parameters and gradients
      left out; None where the framework cannot measure it.
    - `peak_method`: the instrument that gave `peak_bytes`, named in every cell.
    - `regions`: regions the case entered in one step, where the instrument sees them.
    - `peak_fixed_bytes`: where `peak_bytes` is the part of the peak that grows with the
      batch (its method says so), the part that does not; None otherwise.
    """

    forward_matmuls: tuple[int, int] | None
    peak_bytes: int | None
    peak_method: str
    regions: int | None = None
    peak_fixed_bytes: int | None = None


@dataclass(frozen=True)
class Values:
    """A stack's output `y` (B, F) and per block its parameters' gradients `(w1, b1, w2, b2)`
    in canonical layout (kernels `(in, out)`), float32 numpy."""

    y: np.ndarray
    grads: list[tuple[np.ndarray, ...]]


class ScheduleCase(Protocol):
    """One schedule at one depth, built by a stack's bench module (`schedule_case`)."""

    framework: str
    schedule: str  # the schedule's label

    def measure(self) -> ScheduleStatic: ...

    def values(self) -> Values: ...

    def step(self) -> None:
        """One forward+backward, finished (synchronised) when it returns."""
