"""MindSpore's remat policies: its declaration, and the roles its instrument names per policy.

The expected sets are derived by hand from MindSpore's kernels, not read off the
instrument: without remat, autograd keeps x (matmul's grad reads it) and a
(ReluGrad reads its output), plus the two kernels; the bias adds keep
nothing. Under `Cell.recompute()` the forward keeps the block's input x alone.
"""

from __future__ import annotations

import numpy as np
import pytest

from implementations.policies import POLICY_NAMES, Policy
from implementations.stacks.mindspore import as_input, classify
from implementations.stacks.mindspore import mindspore as port_module
from implementations.stacks.numpy import canonical_params

PORT = port_module.MindSpore()

#: policy -> the kept tensors as (role, shape) for (D, F): written by hand.
EXPECTED = {
    "none": lambda d, f: [("a", (f,)), ("x", (d,))],
    "full": lambda d, f: [("x", (d,))],
}


def test_the_port_declares_none_and_full_and_says_why_not_the_rest():
    assert set(PORT.policies) == {"none", "full"}
    assert set(PORT.inexpressible) == set(POLICY_NAMES) - {"none", "full"}
    assert all(reason.strip() for reason in PORT.inexpressible.values())


@pytest.mark.parametrize("policy", ["none", "full"])
@pytest.mark.parametrize(("dim", "features"), [(3, 4), (33, 7)])
def test_the_instrument_names_every_kept_tensor_by_role(policy, dim, features):
    params = canonical_params(1, dim, features)
    x = np.linspace(-1.0, 1.0, dim, dtype=np.float32)
    record = PORT.backward_record(params, x, checkpoint=Policy(policy))
    kept = sorted((t.role, t.shape) for t in record.kept)
    assert kept == EXPECTED[policy](dim, features), record.saved
    assert record.backward_matmuls is None  # not counted: no hook over the backward kernels


def test_a_saved_tensor_no_layer_made_stays_unnamed():
    x = as_input(np.ones(3, np.float32))
    other = as_input(np.zeros(3, np.float32)) * 2.0
    (saved,) = classify({other.data_ptr(): other}, x, [], lambda ptr: "")
    assert (saved.origin, saved.role) == ("activation", "")


def test_a_policy_the_port_cannot_express_is_refused_with_its_reason():
    params, x = canonical_params(1, 3, 4), np.ones(3, np.float32)
    with pytest.raises(ValueError, match="save_dots"):
        PORT.forward(params, x, checkpoint=Policy("save_dots"))
