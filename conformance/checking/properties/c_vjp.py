"""(c) The VJP equals the canonical, for every parameter gradient and the x gradient."""

from __future__ import annotations

from typing import Any

from implementations.contract import Implementation

from .. import strategies
from ..tolerance import analyse_vjp
from .shared import compare_grads, grads_of
from .spec import Property


def prepare_vjp(canonical: Implementation, case) -> dict[str, Any]:
    grads = grads_of(canonical, canonical.vjp(case.params, case.x, case.cotangent, checkpoint=True))
    return {"grads": grads.as_dict(), "analysis": analyse_vjp(case.params, case.x, case.cotangent)}


def check_vjp(port: Implementation, reference: dict, case) -> float:
    """(c) The VJP equals the canonical, for every parameter gradient and the x gradient."""
    grads = grads_of(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=True))
    return compare_grads(
        port.name, "VJP d/d{}", case, reference["analysis"], grads.as_dict(), reference["grads"]
    )


#: A stack's mutant that declares `killed_by="c"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "c", "vjp", "VJP (params and x) equals the canonical", check_vjp, prepare_vjp,
    strategy=strategies.param_cases, cost=70, mutants=MUTANTS,
)  # fmt: skip
