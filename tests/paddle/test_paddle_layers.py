"""The Paddle port's layer pool: a layer lent to one call at a time, never carrying anything
(parameters, gradients, hooks) from one call to the next. Expected values come from a freshly
built layer (no pool) or are written out."""

from __future__ import annotations

import numpy as np
import paddle

from implementations.stacks.numpy import canonical_params
from implementations.stacks.paddle import MLP, STATE_NAMES, grads_of, leaf_input
from implementations.stacks.paddle import paddle as port_module
from implementations.stacks.paddle.paddle_mutants import PaddleNoRecompute

PORT = port_module.Paddle()


def _case(seed: int, dim: int = 6, features: int = 5):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=dim).astype(np.float32)
    return canonical_params(seed, dim, features), x, rng.normal(size=features).astype(np.float32)


def _fresh_vjp(params, x, cotangent, checkpoint):
    model, x = MLP(params, checkpoint=checkpoint), leaf_input(x)
    model(x).backward(paddle.to_tensor(cotangent))
    return grads_of(model, x)


def test_each_call_sees_its_own_parameters_and_a_fresh_gradient():
    for checkpoint in (True, False):
        for seed in (1, 2, 3, 3):  # one shape: the pool's layer serves all four
            params, x, cotangent = _case(seed)
            got = PORT.vjp(params, x, cotangent, checkpoint=checkpoint)
            expected = _fresh_vjp(params, x, cotangent, checkpoint)
            for name, value in expected.as_dict().items():
                np.testing.assert_array_equal(getattr(got, name), value, err_msg=name)
            fresh = MLP(params, checkpoint=checkpoint)(leaf_input(x)).numpy()
            np.testing.assert_array_equal(PORT.forward(params, x, checkpoint=checkpoint), fresh)


def test_a_record_leaves_no_gradient_for_the_next_vjp():
    params, x, cotangent = _case(4)
    expected = _fresh_vjp(params, x, cotangent, True)
    PORT.backward_record(params, x, checkpoint=True)  # backward(ones) on the pooled layer
    got = PORT.vjp(params, x, cotangent, checkpoint=True)
    for name, value in expected.as_dict().items():
        np.testing.assert_array_equal(getattr(got, name), value, err_msg=name)


def test_a_pooled_layer_goes_back_without_gradients():
    params, x, cotangent = _case(5)
    PORT.vjp(params, x, cotangent)
    with PORT.layers.lend(PORT.mlp, params, checkpoint=True) as model:
        assert all(p.grad is None for p in model.parameters())


def test_the_callers_parameters_are_never_written():
    params, x, cotangent = _case(6)
    kept = {name: value.copy() for name, value in params.as_dict().items()}
    PORT.vjp(params, x, cotangent)
    other, _, _ = _case(7)
    PORT.vjp(other, x, cotangent)  # the pooled layer now holds other's values
    for name, value in kept.items():
        np.testing.assert_array_equal(getattr(params, name), value, err_msg=name)


def test_records_repeat_so_no_hook_is_left_on_a_pooled_layer():
    params, x, _ = _case(8)
    for _ in range(3):
        record = PORT.backward_record(params, x, checkpoint=True)
        assert record.recomputed == {"Linear": 2, "ReLU": 1}
        assert not record.saved_by_origin("activation")
    assert PORT.backward_record(params, x, checkpoint=False).recomputed == {}


def test_a_mutant_never_gets_the_ports_layers_nor_the_port_the_mutants():
    params, x, _ = _case(9)
    mutant = PaddleNoRecompute()
    for _ in range(2):
        assert not PORT.backward_record(params, x).saved_by_origin("activation")
        assert mutant.backward_record(params, x).saved_by_origin("activation")


def test_the_pooled_layers_parameter_names_are_the_canonical_ones():
    params, x, cotangent = _case(10)
    PORT.vjp(params, x, cotangent)
    with PORT.layers.lend(PORT.mlp, params, checkpoint=True) as model:
        assert [name for name, _ in model.named_parameters()] == list(STATE_NAMES)
