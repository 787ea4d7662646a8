"""Paddle's remat policies: its declaration, and the roles its instrument names per policy
(`tests.support.stack_kit.HookPolicyKit`).

The expected sets are derived by hand from Paddle's kernels, not read off the
instrument: without remat, autograd keeps x (matmul's grad reads it) and a
(relu_grad reads its output `Out`), plus the two kernels; the bias adds keep
nothing. Under `recompute` the forward keeps the block's input x alone.
"""

from __future__ import annotations

import functools
from typing import ClassVar

from implementations.stacks import hooks_evidence
from implementations.stacks.paddle import instrument, leaf_input
from implementations.stacks.paddle import paddle as port_module
from tests.support.stack_kit import HookPolicyKit


class TestPaddlePolicies(HookPolicyKit):
    PORT = port_module.Paddle()
    #: policy -> the kept tensors as (role, shape) for (D, F): written by hand.
    EXPECTED: ClassVar[dict] = {
        "none": lambda d, f: [("a", (f,)), ("x", (d,))],
        "full": lambda d, f: [("x", (d,))],
    }
    as_input = staticmethod(leaf_input)
    classify = staticmethod(
        functools.partial(hooks_evidence.classify, describe=instrument.describe)
    )
