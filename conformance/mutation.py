"""The mutation run: every mutant against every property, until one rejects it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from implementations.contract import Implementation

from .mutants import MUTANTS, load, load_all
from .properties import BY_ID
from .runner import run_property

# Cheap properties first: most mutants die in the first one that can see them.
KILL_ORDER = ("g", "h", "e", "f", "a", "b", "c", "d")
# Each mutant is a new set of functions to compile, so the hunt draws from
# the small shapes only, with fewer examples than a port gets.
MUTANT_EXAMPLES = 25
MUTANT_EXAMPLES_NOTE = f"{MUTANT_EXAMPLES} examples per property, small shapes, no shrinking"


@dataclass
class MutantResult:
    """`status` is "killed" (with the property and its message), "survived" or "unavailable"."""

    name: str
    bug: str
    status: str
    killed_by: str = ""
    message: str = ""
    examples: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def run_mutants(
    canonical: Implementation | None,
    *,
    max_examples: int = MUTANT_EXAMPLES,
    on_mutant: Callable[[MutantResult], None] | None = None,
) -> list[MutantResult]:
    """Run the suite on every mutant; a mutant is killed by the first property it fails."""
    results = []
    for mutant in load_all():
        if mutant.port is None and mutant.elsewhere and canonical is not None:
            result = hunt_in_own_process(mutant.name, max_examples)
        elif mutant.port is None or canonical is None:
            reason = mutant.reason or "the canonical port is not available"
            result = MutantResult(mutant.name, mutant.bug, "unavailable", message=reason)
        else:
            result = _hunt(mutant.name, mutant.bug, mutant.port, canonical, max_examples)
        results.append(result)
        if on_mutant is not None:
            on_mutant(result)
    return results


def _hunt(name, bug, port, canonical, max_examples) -> MutantResult:
    started, examples = time.perf_counter(), 0
    for prop_id in KILL_ORDER:
        outcome = run_property(
            BY_ID[prop_id], port, canonical, max_examples=max_examples, scope="small", shrink=False
        )
        examples += outcome.examples
        if outcome.status == "fail":
            seconds = time.perf_counter() - started
            return MutantResult(
                name, bug, "killed", outcome.property, outcome.message, examples, seconds
            )
    return MutantResult(
        name, bug, "survived", examples=examples, seconds=time.perf_counter() - started
    )


def hunt_in_own_process(name: str, max_examples: int = MUTANT_EXAMPLES) -> MutantResult:
    """Hunt one mutant in a fresh interpreter, for a mutant whose stack cannot load in this
    one (a Keras mutant where Keras runs on another backend)."""
    code = (
        "import json, sys\n"
        "from conformance.mutation import hunt_here\n"
        "print(json.dumps(hunt_here(sys.argv[1], int(sys.argv[2])).to_json()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, name, str(max_examples)], capture_output=True, text=True
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        message = f"its own process failed: {tail[0]}"
        return MutantResult(name, MUTANTS[name][1], "unavailable", message=message)
    return MutantResult(**json.loads(done.stdout.strip().splitlines()[-1]))


def hunt_here(name: str, max_examples: int = MUTANT_EXAMPLES) -> MutantResult:
    """Load one mutant and the canonical port in this process, and hunt the mutant."""
    import implementations

    from . import profiles

    profiles.load()  # as the run that asked for it: $REMAT_PROFILE, else "ci"
    mutant = load(name)
    if mutant.port is None:
        return MutantResult(name, mutant.bug, "unavailable", message=mutant.reason)
    canonical = implementations.load(implementations.CANONICAL)
    canonical.pin_matmul_precision()
    mutant.port.pin_matmul_precision()
    return _hunt(mutant.name, mutant.bug, mutant.port, canonical, max_examples)


def score(results: list[MutantResult]) -> tuple[int, int]:
    """(killed, total) over the mutants that could run."""
    ran = [r for r in results if r.status != "unavailable"]
    return sum(r.status == "killed" for r in ran), len(ran)
