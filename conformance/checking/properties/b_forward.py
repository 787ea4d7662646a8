"""(b) From shared parameters, the forward pass equals the canonical."""

from __future__ import annotations

import numpy as np

from implementations.contract import Implementation

from .. import strategies
from ..checks import within
from ..tolerance import forward_bound
from .spec import Property


def prepare_forward(canonical: Implementation, case) -> dict[str, np.ndarray]:
    return {
        "output": np.asarray(canonical.forward(case.params, case.x, checkpoint=True)),
        "bound": forward_bound(case.params, case.x),
    }


def check_forward(port: Implementation, reference: dict, case) -> float:
    """(b) From shared parameters, the forward pass equals the canonical."""
    out = port.forward(case.params, case.x, checkpoint=True)
    return within(port.name, "forward output", out, reference["output"], reference["bound"])


#: A stack's mutant that declares `killed_by="b"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "b", "forward", "forward from shared params equals the canonical", check_forward,
    prepare_forward, strategy=strategies.param_cases, cost=60, mutants=MUTANTS,
)  # fmt: skip
