"""`Placement`: where checkpoint regions go over L blocks, and the policy of each. Imports numpy
only.

The regions are `implementations.schedules`' (`Region`, nested as deep as wanted); a schedule
(`none`, `every`, `segments(s)`, `nested(l1,...)`, `binomial(c)`, `optimal(m)`) is one way to
make them, any tuple of block indices and regions covering 0..L-1 in order another. A policy
names what a region saves (`implementations.policies`' labels); "" is the stack's checkpoint as
it is.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..schedules import Item, Region, Schedule, regions, show


@dataclass(frozen=True)
class Placement:
    """Regions over blocks 0..L-1 and their policies.

    **Arguments:**

    - `items`: block indices (run plain) and `Region`s, in block order, from block 0.
    - `policy`: every region's policy ("": the stack's checkpoint as it is).
    - `policies`: region number (outer first, in order: `regions()`) -> its own policy.
    """

    items: tuple[Item, ...]
    policy: str = ""
    policies: Mapping[int, str] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.items, tuple) or not self.items:
            raise ValueError(f"items must be a tuple of blocks and regions, got {self.items!r}")
        whole = Region(self.items)  # checks the items are consecutive blocks
        if whole.blocks.start != 0:
            raise ValueError(f"items must start at block 0, got {show(self.items)}")
        count = sum(1 for _ in regions(self.items))
        for number, policy in self.policies.items():
            if not isinstance(number, int) or not 0 <= number < count:
                raise ValueError(f"policies: region {number!r} is not one of 0..{count - 1}")
            if not isinstance(policy, str):
                raise TypeError(f"policies: region {number}'s policy must be a str")
        if not isinstance(self.policy, str):
            raise TypeError(f"policy must be a str, got {self.policy!r}")

    @classmethod
    def of(cls, schedule: Any, depth: int, policy: str = "") -> Placement:
        """A schedule's placement at `depth` blocks (`Schedule.parse` spelling)."""
        parsed = Schedule.parse(schedule)
        if not parsed.analytic:
            raise ValueError(f"schedule {parsed.label!r} places no regions of its own")
        return cls(parsed.placement(depth), policy)

    @property
    def depth(self) -> int:
        """L, the blocks it covers."""
        return len(Region(self.items).blocks)

    def regions(self) -> Iterator[tuple[int, Region]]:
        """Every region with its nesting depth (1: outermost), outer ones first."""
        return regions(self.items)

    def policy_of(self, number: int) -> str:
        """The policy of region `number` (`regions()` order)."""
        return self.policies.get(number, self.policy)

    def used_policies(self) -> frozenset[str]:
        """Every policy a region of it runs."""
        return frozenset(self.policy_of(n) for n, _ in enumerate(self.regions()))

    def __str__(self) -> str:
        return show(self.items)
