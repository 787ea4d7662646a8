"""The Paddle port's layer pool: a layer lent to one call at a time, never carrying anything
(parameters, gradients, hooks) from one call to the next (`tests.support.stack_kit.PoolKit`, and
Paddle's own tests). Expected values come from a freshly built layer (no pool), from a
float64 numpy MLP (`tests.support.reference`) under the project's bounds, or are written out."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import paddle

from implementations.stacks.paddle import MLP, STATE_NAMES, grads_of, leaf_input
from implementations.stacks.paddle import paddle as port_module
from implementations.stacks.paddle.paddle_mutants import PaddleNoRecompute
from tests.support.stack_kit import PoolKit, pool_case

PORT = port_module.Paddle()


def _fresh_vjp(params, x, cotangent, checkpoint):
    model, x = MLP(params, checkpoint=checkpoint), leaf_input(x)
    model(x).backward(paddle.to_tensor(cotangent))
    return grads_of(model, x)


class TestPaddleLayerPool(PoolKit):
    PORT = PORT
    MUTANT = PaddleNoRecompute
    RECOMPUTED: ClassVar[dict] = {"Linear": 2, "ReLU": 1}

    @staticmethod
    def fresh(params, x, cotangent, checkpoint):
        out = MLP(params, checkpoint=checkpoint)(leaf_input(x)).numpy()
        return out, _fresh_vjp(params, x, cotangent, checkpoint).as_dict()

    @staticmethod
    def same(record):
        # All but the notes: they name tensors by the names Paddle makes afresh each call.
        saved = [(t.shape, t.dtype, t.origin, t.role) for t in record.saved]
        return saved, record.recomputed, record.checkpoint_regions, record.backward_matmuls


def test_a_record_leaves_no_gradient_for_the_next_vjp():
    params, x, cotangent = pool_case(4)
    expected = _fresh_vjp(params, x, cotangent, True)
    PORT.backward_record(params, x, checkpoint=True)  # backward(ones) on the pooled layer
    got = PORT.vjp(params, x, cotangent, checkpoint=True)
    for name, value in expected.as_dict().items():
        np.testing.assert_array_equal(getattr(got, name), value, err_msg=name)


def test_a_pooled_layer_goes_back_without_gradients():
    params, x, cotangent = pool_case(5)
    PORT.vjp(params, x, cotangent)
    with PORT.layers.lend(PORT.mlp, params, checkpoint=True) as model:
        assert all(p.grad is None for p in model.parameters())


def test_the_pooled_layers_parameter_names_are_the_canonical_ones():
    params, x, cotangent = pool_case(10)
    PORT.vjp(params, x, cotangent)
    with PORT.layers.lend(PORT.mlp, params, checkpoint=True) as model:
        assert [name for name, _ in model.named_parameters()] == list(STATE_NAMES)
