"""The JAX base's evidence is traced off the functions whose values are checked: `vjp` pulls
back through `differentiable`, which `backward_record` traces, and `exercise_record` traces the
port's own `nn_checkpoint_forward`. `vjp` takes numpy and cannot be traced, so a port that
overrides it is refused when its class is made, naming what to override instead."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

import jax

from conformance.checking.checks import ConformanceError
from conformance.checking.properties.e_evidence import check_evidence
from conformance.mutants import MUTANTS, load
from implementations.contract import Grads, Params
from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint, block
from implementations.stacks.jax.jax_checkpoint_mutants import (
    OwnExerciseWithoutCheckpoint,
)
from tests.support import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(2), 3, 4)


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def test_the_own_exercise_mutant_has_the_right_values():
    port, mutant = JaxCheckpoint(), OwnExerciseWithoutCheckpoint()
    np.testing.assert_allclose(mutant.forward(PARAMS, X), port.forward(PARAMS, X), rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(mutant.nn_checkpoint_forward(3, X, 4)),
        np.asarray(port.nn_checkpoint_forward(3, X, 4)),
        rtol=1e-6,
    )


def test_property_e_kills_the_own_exercise_mutant_and_passes_the_port():
    assert MUTANTS["jax_own_exercise_no_checkpoint"].killed_by == "e_evidence"
    mutant = load("jax_own_exercise_no_checkpoint").port
    with pytest.raises(ConformanceError, match=r"grad of nn_checkpoint_forward.*saves \d+ activ"):
        check_evidence(mutant, None, (_Case(), 3))
    check_evidence(JaxCheckpoint(), None, (_Case(), 3))


def _plain_vjp(self, params, x, cotangent, *, checkpoint=True):
    # A porter's own pullback: right values, no jax.checkpoint anywhere.
    _, pull_back = jax.vjp(block, dict(params.as_dict()), np.asarray(x, np.float32))
    grads, dx = pull_back(np.asarray(cotangent, np.float32))
    return Grads.of(Params(**grads), np.asarray(dx))


def test_a_port_overriding_vjp_is_refused_naming_apply():
    with pytest.raises(TypeError) as refused:
        type("OwnVjp", (JaxCheckpoint,), {"name": "own_vjp", "vjp": _plain_vjp})
    message = str(refused.value)
    assert "overrides vjp" in message
    assert "backward_record" in message
    assert "override apply (with to_native and to_canonical) instead" in message


def test_vjp_pulls_back_through_the_function_the_record_traces():
    """`differentiable` feeds both: a port that changes it changes the values and the evidence
    alike (here, twice the plain block: twice the gradients, and the record saves the
    activation), never one without the other."""

    class TwicePlain(JaxCheckpoint):
        name = "twice_plain"

        def differentiable(self, params, x, checkpoint):
            run, args = super().differentiable(params, x, False)
            return (lambda native, x: 2 * run(native, x)), args

    port, twice = JaxCheckpoint(), TwicePlain()
    ones = np.ones(4, np.float32)
    ours, theirs = twice.vjp(PARAMS, X, ones), port.vjp(PARAMS, X, ones)
    for name, value in ours.as_dict().items():
        np.testing.assert_allclose(value, 2 * theirs.as_dict()[name], rtol=1e-6, atol=1e-7)
    record = twice.backward_record(PARAMS, X, checkpoint=True)
    assert record.saved_by_origin("activation")
    assert not record.checkpoint_regions
    assert port.backward_record(PARAMS, X, checkpoint=True).saved_roles == {"x"}


def test_a_port_overriding_compiled_is_refused_unless_it_brings_its_own_record():
    """`compiled` makes `vjp`'s values: an own one is refused as an own `vjp` is."""
    own = {"name": "own_compiled", "compiled": property(lambda self: None)}
    with pytest.raises(TypeError) as refused:
        type("OwnCompiled", (JaxCheckpoint,), own)
    message = str(refused.value)
    assert "overrides compiled, which makes vjp's values" in message
    assert "override apply (with to_native and to_canonical) instead" in message

    def backward_record(self, params, x, *, checkpoint=True):
        raise NotImplementedError

    type("OwnCompiledAndRecord", (JaxCheckpoint,), {**own, "backward_record": backward_record})
