"""(d) Checkpoint on equals checkpoint off, within the port, forward and VJP."""

from __future__ import annotations

from typing import Any

from implementations.contract import Implementation

from .. import strategies
from ..checks import within
from ..tolerance import analyse_vjp, forward_bound
from .shared import compare_grads, grads_of
from .spec import Property

#: (d) runs half: on and off differ, where they do, by the arithmetic of a recompute, which
#: every shape shows; half leaves room for values near a relu's kink.
ON_OFF_SHARE = 0.5


def prepare_on_off(canonical: None, case) -> dict[str, Any]:
    return {
        "bound": forward_bound(case.params, case.x),
        "analysis": analyse_vjp(case.params, case.x, case.cotangent),
    }


def check_checkpoint_is_transparent(port: Implementation, reference: dict, case) -> float:
    """(d) Checkpoint on equals checkpoint off, within the port, forward and VJP."""
    on = port.forward(case.params, case.x, checkpoint=True)
    off = port.forward(case.params, case.x, checkpoint=False)
    worst = within(port.name, "forward, checkpoint on vs off", on, off, reference["bound"])
    grads_on = grads_of(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=True))
    grads_off = grads_of(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=False))
    quantity = "VJP d/d{}, checkpoint on vs off"
    comparison = compare_grads(
        port.name, quantity, case, reference["analysis"], grads_on.as_dict(), grads_off.as_dict()
    )
    return max(worst, comparison)


#: A stack's mutant that declares `killed_by="d"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "d", "on_off", "checkpoint on equals off, within the port", check_checkpoint_is_transparent,
    prepare_on_off, strategy=strategies.param_cases, needs_canonical=False, share=ON_OFF_SHARE,
    cost=80, mutants=MUTANTS,
)  # fmt: skip
