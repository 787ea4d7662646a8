"""`implementations.stacks.pool.ModelPool`: a model lent to one call at a time, given each
call's parameters, never returned by a call that raised, at most `size` shapes kept. With a
framework-free model; the ports' own pools are tested in their folders (tests/mindspore,
tests/paddle)."""

from __future__ import annotations

import numpy as np
import pytest

from implementations.contract import Params
from implementations.stacks.pool import ModelPool


class _Model:
    built = 0

    def __init__(self, params: Params, *, checkpoint: bool):
        type(self).built += 1
        self.checkpoint, self.w1 = checkpoint, params.w1.copy()


class _Pool(ModelPool):
    def assign(self, model: _Model, params: Params) -> None:
        model.w1 = params.w1.copy()


def _params(value: float, dim: int = 2, features: int = 3) -> Params:
    full = np.full
    return Params(
        full((dim, features), value, np.float32), full(features, value, np.float32),
        full((features, features), value, np.float32), full(features, value, np.float32),
    )  # fmt: skip


def test_a_model_is_lent_to_one_call_at_a_time_and_gets_each_calls_parameters():
    pool = _Pool()
    with (
        pool.lend(_Model, _params(1), checkpoint=True) as outer,
        pool.lend(_Model, _params(2), checkpoint=True) as inner,
    ):
        assert inner is not outer
        assert outer.w1[0, 0] == 1
        assert inner.w1[0, 0] == 2
    with pool.lend(_Model, _params(3), checkpoint=True) as later:
        assert later in (outer, inner)  # given back, lent again
        assert later.w1[0, 0] == 3


def test_the_key_is_the_class_the_shape_and_the_checkpoint():
    pool = _Pool()

    class _Other(_Model):
        pass

    with pool.lend(_Model, _params(1), checkpoint=True) as first:
        pass
    for build, params, checkpoint in [
        (_Other, _params(1), True),
        (_Model, _params(1), False),
        (_Model, _params(1, dim=3), True),
        (_Model, _params(1, features=4), True),
    ]:
        with pool.lend(build, params, checkpoint=checkpoint) as model:
            assert model is not first
            assert type(model) is build
            assert model.checkpoint is checkpoint


def test_a_call_that_raised_does_not_give_its_model_back():
    pool = _Pool()

    def failing_call() -> _Model:
        with pool.lend(_Model, _params(1), checkpoint=True) as model:
            failing_call.model = model
            raise RuntimeError("the call failed")

    with pytest.raises(RuntimeError, match="the call failed"):
        failing_call()
    with pool.lend(_Model, _params(1), checkpoint=True) as later:
        assert later is not failing_call.model


def test_the_pool_keeps_at_most_its_size_in_shapes():
    pool = _Pool(size=2)
    kept = {}
    for features in (1, 2, 3):
        with pool.lend(_Model, _params(0, features=features), checkpoint=True) as model:
            kept[features] = model
    with pool.lend(_Model, _params(0, features=3), checkpoint=True) as again:
        assert again is kept[3]
    with pool.lend(_Model, _params(0, features=1), checkpoint=True) as rebuilt:
        assert rebuilt is not kept[1]  # the least recently used shape was dropped
