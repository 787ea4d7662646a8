"""Counting matmuls in optimized HLO text: `hlo_dot_count`. Imports the standard library only.

XLA's optimized HLO is the same text whichever front end made it: the JAX
stack reads `jax.jit(...).lower(...).compile().as_text()`, the TensorFlow
stack `tf.function(jit_compile=True).experimental_get_compiler_ir(...)(stage="optimized_hlo")`.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$")
_CALLEE = re.compile(
    r"\b(calls|to_apply|body|condition|true_computation|false_computation)=%([\w.\-]+)"
)
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


def hlo_dot_count(text: str) -> int | None:
    """How many `dot` ops one run of the module's entry computation executes.

    Called computations (fusions, calls) count where they are called; a
    while loop's body counts its known trip count times. None when a loop's
    trip count is unknown, or a conditional makes the count data-dependent.
    """
    computations: dict[str, list[str]] = {}
    entry, current = None, None
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header and not line.startswith(" "):
            current = header.group(1)
            computations[current] = []
            if line.startswith("ENTRY"):
                entry = current
        elif current is not None and line.startswith(" "):
            computations[current].append(line)
    if entry is None:
        return None
    memo: dict[str, int | None] = {}

    def count(name: str) -> int | None:
        if name not in memo:
            memo[name] = None  # a cycle would read this and give up
            total = 0
            for line in computations.get(name, ()):
                if " dot(" in line:
                    total += 1
                if _BRANCHES.search(line):
                    return None  # which branch runs depends on the data
                trips = 1
                if " while(" in line:
                    found = _TRIP_COUNT.search(line)
                    if found is None:
                        return None
                    trips = int(found.group(1))
                for kind, callee in _CALLEE.findall(line):
                    inner = count(callee)
                    if inner is None:
                        return None
                    total += inner * (trips if kind == "body" else 1)
            memo[name] = total
        return memo[name]

    return count(entry)
