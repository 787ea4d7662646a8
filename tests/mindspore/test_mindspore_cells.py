"""The MindSpore port's cell pool: a cell lent to one call at a time, never carrying anything
from one call to the next (`tests.support.stack_kit.PoolKit`). Expected values come from a freshly
built cell (no pool) or from a float64 numpy MLP (`tests.support.reference`) under the project's
bounds."""

from __future__ import annotations

from typing import ClassVar

from implementations.stacks.mindspore import MLP, ms, parameters
from implementations.stacks.mindspore import mindspore as port_module
from implementations.stacks.mindspore.mindspore_mutants import MindSporeNoRecompute
from tests.support.stack_kit import PoolKit


class TestMindSporeCellPool(PoolKit):
    PORT = port_module.MindSpore()
    MUTANT = MindSporeNoRecompute
    RECOMPUTED: ClassVar[dict] = {"Affine": 2, "ReLU": 1}

    @staticmethod
    def fresh(params, x, cotangent, checkpoint):
        model = MLP(params, checkpoint=checkpoint)
        out = model(ms.Tensor(x)).asnumpy()
        _, vjp_fn = ms.vjp(model, ms.Tensor(x), weights=parameters(model))
        (dx,), grads = vjp_fn(ms.Tensor(cotangent))
        names = ("w1", "b1", "w2", "b2", "x")
        return out, dict(zip(names, [*(g.asnumpy() for g in grads), dx.asnumpy()], strict=True))
