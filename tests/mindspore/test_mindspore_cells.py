"""The MindSpore port's cell pool: a cell lent to one call at a time, never carrying anything
from one call to the next. Expected values come from a freshly built cell (no pool) or from a
float64 numpy MLP (`tests.reference`) under the project's bounds."""

from __future__ import annotations

import numpy as np

from conformance.checking.tolerance import vjp_bounds
from implementations.stacks.mindspore import MLP, ms, parameters
from implementations.stacks.mindspore import mindspore as port_module
from implementations.stacks.mindspore.mindspore_mutants import MindSporeNoRecompute
from implementations.stacks.numpy import canonical_params
from tests import reference

PORT = port_module.MindSpore()


def _case(seed: int, dim: int = 6, features: int = 5):
    rng = np.random.default_rng(seed)
    params = canonical_params(seed, dim, features)
    return (
        params,
        rng.normal(size=dim).astype(np.float32),
        rng.normal(size=features).astype(np.float32),
    )


def _fresh_vjp(params, x, cotangent, checkpoint):
    model = MLP(params, checkpoint=checkpoint)
    _, vjp_fn = ms.vjp(model, ms.Tensor(x), weights=parameters(model))
    (dx,), grads = vjp_fn(ms.Tensor(cotangent))
    return [g.asnumpy() for g in grads] + [dx.asnumpy()]


def test_each_call_sees_its_own_parameters_never_the_previous_ones():
    for checkpoint in (True, False):
        for seed in (1, 2, 3):  # one shape: the pool's cell serves all three
            params, x, cotangent = _case(seed)
            got = PORT.vjp(params, x, cotangent, checkpoint=checkpoint)
            expected = _fresh_vjp(params, x, cotangent, checkpoint)
            for mine, theirs in zip([got.w1, got.b1, got.w2, got.b2, got.x], expected, strict=True):
                np.testing.assert_array_equal(mine, theirs)
            bound = vjp_bounds(params, x, cotangent)["x"]
            assert np.all(np.abs(got.x - reference.vjp(params, x, cotangent)["x"]) <= bound)
            fresh = MLP(params, checkpoint=checkpoint)(ms.Tensor(x)).asnumpy()
            np.testing.assert_array_equal(PORT.forward(params, x, checkpoint=checkpoint), fresh)


def test_gradients_do_not_accumulate_over_calls():
    params, x, cotangent = _case(4)
    first = PORT.vjp(params, x, cotangent)
    for _ in range(3):
        again = PORT.vjp(params, x, cotangent)
        for name, value in first.as_dict().items():
            np.testing.assert_array_equal(getattr(again, name), value, err_msg=name)


def test_the_callers_parameters_are_never_written():
    params, x, cotangent = _case(5)
    kept = {name: value.copy() for name, value in params.as_dict().items()}
    PORT.vjp(params, x, cotangent)
    PORT.backward_record(params, x)
    other, _, _ = _case(6)
    PORT.vjp(other, x, cotangent)  # the pooled cell now holds other's values
    for name, value in kept.items():
        np.testing.assert_array_equal(getattr(params, name), value, err_msg=name)


def test_records_repeat_exactly_so_no_hook_is_left_on_a_pooled_cell():
    params, x, _ = _case(7)
    records = [PORT.backward_record(params, x, checkpoint=True) for _ in range(3)]
    assert records[0].recomputed == {"Affine": 2, "ReLU": 1}
    assert all(record == records[0] for record in records)
    off = [PORT.backward_record(params, x, checkpoint=False) for _ in range(2)]
    assert off[0].recomputed == {}
    assert off[1] == off[0]


def test_a_mutant_never_gets_the_ports_cells_nor_the_port_the_mutants():
    params, x, _ = _case(8)
    mutant = MindSporeNoRecompute()
    for _ in range(2):
        assert not PORT.backward_record(params, x).saved_by_origin("activation")
        assert mutant.backward_record(params, x).saved_by_origin("activation")
