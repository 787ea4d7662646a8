"""The MLX base reads its evidence off the port's own graphs (`pullback`, which `vjp`
evaluates; `nn_checkpoint_forward`, lazy), never off a second model: a port whose own
`forward`, `pullback` and `nn_checkpoint_forward` never checkpoint has the right values and
fails (e), while the base's module still checkpoints. `vjp` returns evaluated numpy (the graph
is freed): a port that overrides it is refused when its class is made."""

from __future__ import annotations

import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties.e_evidence import check_evidence
from conformance.mutants import load
from implementations.stacks.mlx import mlx as port_module
from implementations.stacks.mlx import to_host_array
from implementations.stacks.mlx.mlx import Mlx
from implementations.stacks.mlx.mlx_mutants import OwnModelWithoutCheckpoint
from tests.support.own_call_kit import Case, OwnCallKit, X


class TestOwnCall(OwnCallKit):
    PORT, MUTANT = Mlx, OwnModelWithoutCheckpoint
    MUTANT_NAME = "mlx_own_model_no_checkpoint"
    KILLED_WITH = r"VJP with checkpoint on: saves \d activation"
    native = staticmethod(to_host_array)

    def check_own_exercise(self, port):
        with pytest.raises(ConformanceError, match=r"grad of nn_checkpoint_forward: saves"):
            check_evidence(port, None, (Case(), 3))
        record = port.exercise_record(3, X, 4)
        assert record.recomputed == {}
        assert record.checkpoint_regions == 0


def test_the_port_s_own_exercise_names_its_arrays_for_the_record_only():
    """The record's tap reaches the port's `nn_checkpoint_forward` (shapes and roles: the
    export has none), and is gone after it."""
    off = load("mlx_no_checkpoint").port.exercise_record(3, X, 4)
    assert {t.role for t in off.saved_by_origin("activation")} == {"h"}  # relu's VJP reads h
    assert all(t.shape == (4,) for t in off.saved_by_origin("activation"))
    assert port_module.active_tap() is port_module.no_tap


def test_a_port_overriding_vjp_is_refused_naming_what_to_override():
    with pytest.raises(TypeError) as refused:

        class OwnVjp(Mlx):
            name = "own_vjp"

            def vjp(self, params, x, cotangent, *, checkpoint=True):
                return OwnModelWithoutCheckpoint().vjp(params, x, cotangent)

    message = str(refused.value)
    assert "overrides vjp" in message
    assert "backward_record" in message
    assert "override pullback (or mlp, the module class it builds) instead" in message
