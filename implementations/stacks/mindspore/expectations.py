"""What MindSpore's instrument (saved-tensor hooks, PyNative) shows under each remat policy."""

from implementations.composition import whole_rerun
from implementations.expectations import Expectations, uncounted
from implementations.stateful import StateDeclaration, StateDegradation
from implementations.stateful_port import updates_twice

#: No upstream report was found; the repro is ready for one.
_UNREPORTED = (
    "unreported upstream (mindspore 2.10.0, PyNative): repros/mindspore_recompute_state.py"
)
_SEEDING = (
    "ms.set_seed(seed mod 2**32) before the block is made: nn.Dropout's ops.Dropout takes its "
    "seeds from it and keeps its own draw count"
)
_UPDATED_TWICE = StateDegradation(
    "updates",
    2,
    _UNREPORTED,
    "the recompute runs the block's construct again, its assignments of the running "
    "statistics too: 2 updates (1.90 x one update's mean at momentum 0.9, the repro's)",
)

#: The block with variables and RNGs (property (l)), measured on mindspore 2.10.0 (PyNative,
#: CPU); tests/mindspore/test_mindspore_stateful.py holds each count.
STATEFUL = {
    "mindspore": {
        "default": updates_twice(
            "Cell.recompute() on the block",
            _SEEDING + "; the recompute draws the forward's mask again",
            _UPDATED_TWICE,
            fix="mindspore:stats_outside",
            repro="repros/mindspore_recompute_state.py",
        ),
        "function": StateDeclaration(
            "mindspore.recompute(block, x)",
            _SEEDING,
            replay=False,
            updates=2,
            degradations=(
                StateDegradation(
                    "replay",
                    1,
                    _UNREPORTED,
                    "the recompute's dropout draws a new mask: 1 fresh mask, and the gradients "
                    "are the fresh mask's (the op's draw count after the step is the same as "
                    "without the recompute)",
                ),
                _UPDATED_TWICE,
            ),
            fix="mindspore:default",
            repro="repros/mindspore_recompute_state.py",
        ),
        "stats_outside": StateDeclaration(
            "Cell.recompute() on the block, the statistics applied once after the step",
            _SEEDING + "; the recompute draws the forward's mask again and writes the same "
            "batch statistics to the slot the step applies once",
        ),
    },
}

EXPECTATIONS = Expectations(
    stateful=STATEFUL,
    families={
        "mindspore": uncounted(
            "x a",
            "MindSpore's ReluGrad reads its output a",
            "Cell.recompute keeps the cell's input x",
        ),
    },
    # Measured on the port's own vjp (tests/mindspore/test_mindspore_composition.py pins them).
    compositions={
        # rerun counts: the record's rerun_matmuls (ops.matmul calls in backward)
        "mindspore": whole_rerun(
            once="Cell.recompute() is reentrant by default: _RecomputeCell (mindspore/common/"
            "recompute.py) runs the cell under _no_grad and its bprop reruns all of it",
            twice="the outer _RecomputeCell.bprop reruns the inner recomputed cell's forward "
            "(2 matmuls, unused), whose bprop reruns the block again (no early stop)",
            under_trainer="mindspore.recompute over the recomputed cell is the same "
            "_RecomputeCell: its bprop reruns the inner recompute's forward for nothing",
        ),
    },
)
