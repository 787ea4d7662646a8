"""What MindSpore's instrument (saved-tensor hooks, PyNative) shows under each remat policy."""

from implementations.composition import composed
from implementations.expectations import NOT_COUNTED, Expectations, expect

EXPECTATIONS = Expectations(
    families={
        "mindspore": {
            "none": expect(
                "x a", None, why=f"MindSpore's ReluGrad reads its output a; {NOT_COUNTED}"
            ),
            "full": expect(
                "x", None, why=f"Cell.recompute keeps the cell's input x; {NOT_COUNTED}"
            ),
        },
    },
    # Measured on the port's own vjp (tests/mindspore/test_mindspore_composition.py pins them).
    compositions={
        "mindspore": {
            "once": composed(
                "x",
                2,
                2,  # the record's rerun_matmuls (ops.matmul calls in backward)
                why="Cell.recompute() is reentrant by default: _RecomputeCell (mindspore/common/"
                "recompute.py) runs the cell under _no_grad and its bprop reruns all of it",
            ),
            "twice": composed(
                "x",
                2,
                4,  # the record's rerun_matmuls (ops.matmul calls in backward)
                why="the outer _RecomputeCell.bprop reruns the inner recomputed cell's forward "
                "(2 matmuls, unused), whose bprop reruns the block again (no early stop)",
                degradation=True,
            ),
            "under_trainer": composed(
                "x",
                2,
                4,  # the record's rerun_matmuls (ops.matmul calls in backward)
                why="mindspore.recompute over the recomputed cell is the same _RecomputeCell: "
                "its bprop reruns the inner recompute's forward for nothing",
                degradation=True,
            ),
        },
    },
)
