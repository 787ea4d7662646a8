"""A mutant that changes process-wide state, then fails: for
tests/core/running/test_shared_workers.py.

`serve` registers it and runs a suite worker's main loop (`worker.serve`), as a run starts
one; the test sends it a mutants-only request, as a run sends the mutants of a family whose
port it does not check, and the plugin every mutant.
"""

from __future__ import annotations

import numpy as np

from conformance import mutants
from conformance.running import worker
from implementations.stacks.jax.flax_linen import FlaxLinen

NAME = "state_flipping"


class StateFlipping(FlaxLinen):
    """Turns numpy's underflow warnings on (a process-wide setting), then raises."""

    def nn_checkpoint_forward(self, seed, x, features):
        np.seterr(under="warn")
        raise RuntimeError("this mutant changed numpy's underflow handling")


def serve(settings: worker.Settings) -> None:
    mutants.MUTANTS[NAME] = mutants.MutantSpec(
        NAME, f"{__name__}:StateFlipping", "flips numpy's underflow handling", "flax_linen",
        killed_by="b_forward",
    )  # fmt: skip
    worker.serve(settings)
