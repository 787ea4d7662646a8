"""What Paddle's instrument (saved-tensor hooks) shows under each remat policy."""

from implementations.composition import whole_rerun
from implementations.expectations import Expectations, uncounted
from implementations.stateful import StateDeclaration, StateDegradation
from implementations.stateful_port import redraws, updates_twice

#: RecomputeFunction (paddle/distributed/fleet/recompute/recompute.py, paddle 3.3.1) reruns the
#: block's forward in backward, BatchNorm's update too; no upstream report was found (torch's
#: is pytorch#96136). Paddle#72364 made recompute keep python's and numpy's generators as well.
_TWICE = (
    "unreported upstream (RecomputeFunction reruns the forward, paddle 3.3.1; as pytorch#96136 "
    "for torch): repros/paddle_recompute_state.py"
)
_NO_PRESERVE = (
    "recompute(preserve_rng_state=False), documented: the generator is not restored for the "
    "recompute (paddle 3.3.1; Paddle#72364 for python's and numpy's): "
    "repros/paddle_recompute_state.py"
)
_SEEDING = "paddle.seed(seed); Dropout draws from Paddle's CPU generator"
_UPDATED_TWICE = StateDegradation(
    "updates",
    2,
    _TWICE,
    "the recompute runs BatchNorm1D again in training mode: the running statistics take a "
    "second update (1.90 x one update's mean at momentum 0.9, the repro's)",
)

#: The block with variables and RNGs (property (l)), measured on paddle 3.3.1;
#: tests/paddle/test_paddle_stateful.py holds each count.
STATEFUL = {
    "paddle": {
        "default": updates_twice(
            "fleet.utils.recompute(block, x)",
            _SEEDING + "; recompute restores the generator's state for the rerun",
            _UPDATED_TWICE,
            fix="paddle:stats_outside",
            repro="repros/paddle_recompute_state.py",
        ),
        "no_preserve": redraws(
            "fleet.utils.recompute(block, x, preserve_rng_state=False)",
            _SEEDING + "; the rerun draws on from where the forward left the generator",
            _NO_PRESERVE,
            replay="the rerun's Dropout draws the generator's next mask: 1 fresh mask, and "
            "the gradients are the fresh mask's",
            stream="the rerun's draw leaves the generator ahead",
            updates=_UPDATED_TWICE,
            fix="paddle:stats_outside",
            repro="repros/paddle_recompute_state.py",
        ),
        "stats_outside": StateDeclaration(
            "fleet.utils.recompute(block, x), the statistics updated outside",
            _SEEDING + "; recompute restores the generator's state for the rerun, and the "
            "rerun writes the same batch statistics to the slot the step applies once",
        ),
    },
}

EXPECTATIONS = Expectations(
    stateful=STATEFUL,
    families={
        "paddle": uncounted(
            "x a",
            "Paddle's relu_grad reads its output a",
            "fleet.utils.recompute keeps the block's input x",
        ),
    },
    # Measured on the port's own vjp (tests/paddle/test_paddle_composition.py pins them).
    compositions={
        # rerun counts: the record's rerun_matmuls (instrument.observe)
        "paddle": whole_rerun(
            once="RecomputeFunction (a PyLayer, paddle/distributed/fleet/recompute/"
            "recompute.py) keeps x, runs the block under no_grad, reruns all of it in backward",
            twice="the outer RecomputeFunction.backward reruns the inner recompute's forward "
            "(2 matmuls, unused), whose backward reruns the block again (no early stop)",
            under_trainer="a recompute over the model's call nests as twice does: its backward "
            "reruns the model's recompute forward for nothing (RecomputeFunction.backward)",
        ),
    },
)
