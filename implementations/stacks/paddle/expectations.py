"""What Paddle's instrument (saved-tensor hooks) shows under each remat policy."""

from implementations.composition import composed
from implementations.expectations import NOT_COUNTED, Expectations, expect

EXPECTATIONS = Expectations(
    families={
        "paddle": {
            "none": expect(
                "x a", None, why=f"Paddle's relu_grad reads its output a; {NOT_COUNTED}"
            ),
            "full": expect(
                "x", None, why=f"fleet.utils.recompute keeps the block's input x; {NOT_COUNTED}"
            ),
        },
    },
    # Measured on the port's own vjp (tests/paddle/test_paddle_composition.py pins them).
    compositions={
        "paddle": {
            "once": composed(
                "x",
                2,
                2,  # the record's rerun_matmuls (instrument.observe)
                why="RecomputeFunction (a PyLayer, paddle/distributed/fleet/recompute/"
                "recompute.py) keeps x, runs the block under no_grad, reruns all of it in backward",
            ),
            "twice": composed(
                "x",
                2,
                4,  # the record's rerun_matmuls (instrument.observe)
                why="the outer RecomputeFunction.backward reruns the inner recompute's forward "
                "(2 matmuls, unused), whose backward reruns the block again (no early stop)",
                degradation=True,
            ),
            "under_trainer": composed(
                "x",
                2,
                4,  # the record's rerun_matmuls (instrument.observe)
                why="a recompute over the model's call nests as twice does: its backward reruns "
                "the model's recompute forward for nothing (RecomputeFunction.backward)",
                degradation=True,
            ),
        },
    },
)
