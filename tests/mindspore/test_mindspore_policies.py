"""MindSpore's remat policies: its declaration, and the roles its instrument names per policy
(`tests.support.stack_kit.HookPolicyKit`).

The expected sets are derived by hand from MindSpore's kernels, not read off the
instrument: without remat, autograd keeps x (matmul's grad reads it) and a
(ReluGrad reads its output), plus the two kernels; the bias adds keep
nothing. Under `Cell.recompute()` the forward keeps the block's input x alone.
"""

from __future__ import annotations

from typing import ClassVar

from implementations.stacks.mindspore import as_input, classify
from implementations.stacks.mindspore import mindspore as port_module
from tests.support.stack_kit import HookPolicyKit


class TestMindSporePolicies(HookPolicyKit):
    PORT = port_module.MindSpore()
    #: policy -> the kept tensors as (role, shape) for (D, F): written by hand.
    EXPECTED: ClassVar[dict] = {
        "none": lambda d, f: [("a", (f,)), ("x", (d,))],
        "full": lambda d, f: [("x", (d,))],
    }
    as_input = staticmethod(as_input)
    classify = staticmethod(classify)
