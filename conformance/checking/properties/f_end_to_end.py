"""(f) `nn_checkpoint_forward(seed, x, features)` equals the canonical's."""

from __future__ import annotations

import numpy as np

from implementations.contract import Implementation

from .. import strategies
from ..checks import within
from ..tolerance import INIT_ULPS, forward_bound
from .shared import params_of, run_seeded_forward
from .spec import Property


def prepare_end_to_end(canonical: Implementation, case) -> dict[str, np.ndarray]:
    params = params_of(canonical, canonical.init_params(case.seed, case.dim, case.features))
    return {
        "output": run_seeded_forward(canonical, case, canonical.from_numpy(case.x.copy())),
        # Each port makes its own init, which may differ by INIT_ULPS from Flax's.
        "bound": forward_bound(params, case.x, param_ulps=INIT_ULPS),
    }


def check_end_to_end(port: Implementation, reference: dict, case) -> float:
    """(f) `nn_checkpoint_forward(seed, x, features)` equals the canonical's."""
    out = run_seeded_forward(port, case, port.from_numpy(case.x.copy()))
    return within(
        port.name, "nn_checkpoint_forward output", out, reference["output"], reference["bound"]
    )


#: A stack's mutant that declares `killed_by="f"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "f", "end_to_end", "nn_checkpoint_forward equals the canonical", check_end_to_end,
    prepare_end_to_end, strategy=strategies.seeded_forward_cases, cost=40, mutants=MUTANTS,
)  # fmt: skip
