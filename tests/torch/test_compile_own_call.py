"""The compiled torch port reads its evidence off its own call: the partition of the compiled
call its `vjp` or `nn_checkpoint_forward` ran (`compiled.capture`, any recorder), or, where
that call compiled nothing, torch's eager instrument on it. A port whose own value methods are
a plain eager MLP has the right values and fails (e), while the base's compiled model still
checkpoints."""

from __future__ import annotations

from implementations.stacks.torch.compiled import INSTRUMENT as COMPILED_INSTRUMENT
from implementations.stacks.torch.instrument import INSTRUMENT as EAGER_INSTRUMENT
from implementations.stacks.torch.torch_compile import TorchCompile
from implementations.stacks.torch.torch_compile_mutants import (
    CompiledWithoutCheckpoint,
    OwnModelWithoutCheckpoint,
)
from tests.support.own_call_kit import PARAMS, OwnCallKit, X


class TestOwnCall(OwnCallKit):
    PORT, MUTANT = TorchCompile, OwnModelWithoutCheckpoint
    MUTANT_NAME = "compiled_own_model_no_checkpoint"
    KILLED_WITH = r"saves 1 activation.*\ba: output of Relu"

    @staticmethod
    def native(out):
        return out.detach().numpy()

    def check_own_exercise(self, port):
        record = port.exercise_record(3, X, 4)
        assert {t.role for t in record.saved_by_origin("activation")} == {"a"}
        assert record.recomputed == {}

    def check_port_exercise(self, record):
        assert not record.saved_by_origin("activation")
        assert record.checkpoint_regions == 1


def test_a_call_that_compiles_nothing_is_read_by_the_eager_instrument():
    assert OwnModelWithoutCheckpoint().backward_record(PARAMS, X).instrument == EAGER_INSTRUMENT
    assert TorchCompile().backward_record(PARAMS, X).instrument == COMPILED_INSTRUMENT


def test_the_partition_is_the_one_the_port_s_own_call_ran():
    """A port whose `run` compiles the module without its checkpoint: the record is the
    partition that call ran, whichever compiled module ran it (here the port's own)."""
    on = CompiledWithoutCheckpoint().backward_record(PARAMS, X, checkpoint=True)
    assert on.checkpoint_regions == 0
    assert TorchCompile().backward_record(PARAMS, X, checkpoint=True).checkpoint_regions == 1
