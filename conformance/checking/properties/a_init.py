"""(a) The port's own seeded init equals the canonical parameters to 2 ulp."""

from __future__ import annotations

from implementations.contract import PARAM_NAMES, Implementation, Params

from .. import strategies
from ..checks import within_ulps
from ..tolerance import INIT_ULPS
from .shared import params_of
from .spec import Property


def prepare_init(canonical: Implementation, case) -> Params:
    return params_of(canonical, canonical.init_params(case.seed, case.dim, case.features))


def check_init(port: Implementation, reference: Params, case) -> float:
    """(a) The port's own seeded init equals the canonical parameters to 2 ulp."""
    mine = params_of(port, port.init_params(case.seed, case.dim, case.features))
    return max(
        within_ulps(
            port.name, f"init {name}", getattr(mine, name), getattr(reference, name), INIT_ULPS
        )
        for name in PARAM_NAMES
    )


#: A stack's mutant that declares `killed_by="a"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "a", "init", "init params equal the canonical (2 ulp)", check_init, prepare_init,
    strategy=strategies.seeded_forward_cases, cost=50, mutants=MUTANTS,
)  # fmt: skip
