"""What a stack's evidence instrument must show under each remat policy. Imports nothing.

Each stack declares its expectations in its folder (`expectations.py`, named
by its manifest): per **instrument family** (a stack's name, or the name a
port's manifest entry gives, such as `torch_compile`), per policy, an
`Expected` record with a one-line reason. The sets are read off measured
tables and the frameworks' documented behaviour, never computed by the code
under test. Where frameworks legitimately differ, the difference is written
there once, with its reason; it is never a looser check.

**Documented degradations** are upstream behaviours that users walk into,
pinned with the upstream version they were measured on. Each has a test
that fails the day upstream changes; reports show them as *documented
degradation*, never as a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

#: The largest weight dimension inductor still decomposes (`torch._inductor.decomposition.addmm`).
WIDE = 16
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
    - `wide`: roles kept in addition when F > `WIDE` (inductor writes a matmul on a
      vector with both weight dimensions <= 16 as multiplies and a sum; with
      the second layer one addmm, it also keeps relu's mask).
    """

    roles: frozenset[str]
    backward_matmuls: int | None
    host: frozenset[str] = frozenset()
    why: str = ""
    wide: frozenset[str] = frozenset()

    def roles_at(self, features: int | None) -> frozenset[str]:
        """The expected roles for width `features` (None: unknown, `roles` alone)."""
        if features is not None and features > WIDE:
            return self.roles | self.wide
        return self.roles


def expect(
    roles: str, matmuls: int | None, host: str = "", why: str = "", wide: str = ""
) -> Expected:
    """An `Expected` from space-separated role names: `expect("x a", 4, why=...)`."""
    return Expected(
        frozenset(roles.split()), matmuls, frozenset(host.split()), why, frozenset(wide.split())
    )


@dataclass(frozen=True)
class Degradation:
    """An upstream behaviour that silently does less (or more) than the policy says.

    - `family`: the instrument family (or stack) it concerns; `policy`: the policy name.
    - `what`: one line for reports; `short`: a few words for tables.
    - `measured`: the upstream distribution and version it was measured on.
    """

    family: str
    policy: str
    what: str
    measured: str
    short: str = ""


#: An entry: the record, or a function of (dim, features) giving it where the
#: framework's choice depends on the sizes.
Entry = Expected | Callable[[int | None, int | None], Expected]


@dataclass(frozen=True)
class Expectations:
    """One stack's declaration: `families` (family -> policy label or name -> `Entry`) and
    its documented `degradations`."""

    families: Mapping[str, Mapping[str, Entry]] = field(default_factory=dict)
    degradations: tuple[Degradation, ...] = ()
