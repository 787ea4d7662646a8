"""The compiled torch port reads its evidence off its own call: the partition of the compiled
call its `vjp` or `nn_checkpoint_forward` ran (`compiled.capture`, any recorder), or, where
that call compiled nothing, torch's eager instrument on it. A port whose own value methods are
a plain eager MLP has the right values and fails (e), while the base's compiled model still
checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import check_evidence
from conformance.mutants import MUTANTS, load
from implementations.stacks.torch.compiled import INSTRUMENT as COMPILED_INSTRUMENT
from implementations.stacks.torch.observed import INSTRUMENT as EAGER_INSTRUMENT
from implementations.stacks.torch.torch_compile import TorchCompile
from implementations.stacks.torch.torch_compile_mutants import (
    CompiledWithoutCheckpoint,
    OwnModelWithoutCheckpoint,
)
from tests import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def test_the_own_model_mutant_has_the_right_values():
    port, mutant = TorchCompile(), OwnModelWithoutCheckpoint()
    cotangent = np.linspace(-1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(mutant.forward(PARAMS, X), port.forward(PARAMS, X), rtol=1e-6)
    ours, theirs = mutant.vjp(PARAMS, X, cotangent), port.vjp(PARAMS, X, cotangent)
    for name, value in ours.as_dict().items():
        np.testing.assert_allclose(value, theirs.as_dict()[name], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        mutant.nn_checkpoint_forward(3, X, 4).detach().numpy(),
        port.nn_checkpoint_forward(3, X, 4).detach().numpy(),
        rtol=1e-6,
    )


def test_property_e_kills_the_own_model_mutant_and_passes_the_port():
    assert MUTANTS["compiled_own_model_no_checkpoint"].killed_by == "e_evidence"
    mutant = load("compiled_own_model_no_checkpoint").port
    with pytest.raises(ConformanceError, match=r"saves 1 activation.*\ba: output of Relu"):
        check_evidence(mutant, None, (_Case(), 3))
    check_evidence(TorchCompile(), None, (_Case(), 3))


def test_a_call_that_compiles_nothing_is_read_by_the_eager_instrument():
    assert OwnModelWithoutCheckpoint().backward_record(PARAMS, X).instrument == EAGER_INSTRUMENT
    assert TorchCompile().backward_record(PARAMS, X).instrument == COMPILED_INSTRUMENT


def test_the_partition_is_the_one_the_port_s_own_call_ran():
    """A port whose `run` compiles the module without its checkpoint: the record is the
    partition that call ran, whichever compiled module ran it (here the port's own)."""
    on = CompiledWithoutCheckpoint().backward_record(PARAMS, X, checkpoint=True)
    assert on.checkpoint_regions == 0
    assert TorchCompile().backward_record(PARAMS, X, checkpoint=True).checkpoint_regions == 1


def test_the_exercise_record_observes_the_port_s_own_exercise():
    class OwnExerciseOnly(TorchCompile):
        name = "own_exercise_only"
        nn_checkpoint_forward = OwnModelWithoutCheckpoint.nn_checkpoint_forward

    record = OwnExerciseOnly().exercise_record(3, X, 4)
    assert {t.role for t in record.saved_by_origin("activation")} == {"a"}
    assert record.recomputed == {}
    checked = TorchCompile().exercise_record(3, X, 4)
    assert not checked.saved_by_origin("activation")
    assert checked.checkpoint_regions == 1
