"""The DeepSpeed port: `deepspeed.checkpointing.checkpoint` (reentrant) on the torch stack, its
evidence, and DeepSpeed's pitfalls pinned.

Expected values come from the eager torch port (the same module and init,
`torch.utils.checkpoint`), which the suite holds to the canonical one.
"""

from __future__ import annotations

import numpy as np
import pytest

deepspeed = pytest.importorskip("deepspeed")
torch = pytest.importorskip("torch")

from implementations.stacks.deepspeed import deepspeed as port_module  # noqa: E402
from implementations.stacks.numpy import canonical_params  # noqa: E402
from implementations.stacks.torch import (  # noqa: E402
    build_mlp,
    leaf_input,
    pytorch,
)

PORT, EAGER = port_module.DeepSpeed(), pytorch.PyTorch()


def _x(seed: int, dim: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=dim).astype(np.float32)


@pytest.mark.parametrize(("dim", "features"), [(1, 1), (3, 4), (16, 16), (7, 33)])
def test_the_same_bits_as_the_eager_torch_checkpoint(dim, features):
    params, x, cotangent = canonical_params(dim, dim, features), _x(dim, dim), _x(1, features)
    np.testing.assert_array_equal(PORT.forward(params, x), EAGER.forward(params, x))
    ours, eager = PORT.vjp(params, x, cotangent), EAGER.vjp(params, x, cotangent)
    for name, value in ours.as_dict().items():
        np.testing.assert_array_equal(value, eager.as_dict()[name], err_msg=name)


def test_the_instrument_reads_what_the_checkpoint_keeps_and_reruns():
    params, x = canonical_params(5, 6, 5), _x(3, 6)
    on = PORT.backward_record(params, x)
    # A reentrant checkpoint keeps its inputs detached, outside autograd's
    # saved tensors: no hook sees them, the instrument reads them off the
    # checkpoint node (x alone); backward reruns the block.
    assert [(t.origin, t.role, t.shape) for t in on.saved] == [("input", "x", (6,))]
    assert "kept on the checkpoint node" in on.saved[0].note
    assert on.recomputed == {"aten.addmm": 2, "aten.relu": 1}
    assert on.checkpoint_regions == 1
    off = PORT.backward_record(params, x, checkpoint=False)
    assert off.saved_by_origin("activation")
    assert off.recomputed == {}
    assert off.checkpoint_regions == 0


#: policy -> (the kept tensors as (role, shape) for (D, F), backward matmuls), by hand:
#: without remat autograd keeps x (addmm's grad reads it) and a (relu's backward reads its
#: output); backward runs 2 matmuls per layer. DeepSpeed's reentrant checkpoint keeps x on its
#: node and reruns the whole block, both addmms, before those 4: 6.
EXPECTED_BY_POLICY = {
    "none": (lambda d, f: [("a", (f,)), ("x", (1, d))], 4),
    "full": (lambda d, f: [("x", (d,))], 6),
}


def test_the_port_declares_none_and_full_and_says_why_not_the_rest():
    from implementations.policies import POLICY_NAMES

    assert set(PORT.policies) == {"none", "full"}
    assert set(PORT.inexpressible) == set(POLICY_NAMES) - {"none", "full"}
    assert "0D and 2D" in PORT.inexpressible["offload_dots"]
    assert "2-D" in PORT.inexpressible["budget"]


@pytest.mark.parametrize("policy", ["none", "full"])
@pytest.mark.parametrize(("dim", "features"), [(3, 4), (33, 7)])
def test_the_instrument_names_every_kept_tensor_by_role(policy, dim, features):
    from implementations.policies import Policy

    params, x = canonical_params(1, dim, features), _x(2, dim)
    record = PORT.backward_record(params, x, checkpoint=Policy(policy))
    kept, matmuls = EXPECTED_BY_POLICY[policy]
    assert sorted((t.role, t.shape) for t in record.kept) == kept(dim, features), record.saved
    assert record.backward_matmuls == matmuls


def test_the_forward_runs_twice_with_the_checkpoint():
    runs = []
    model, x = build_mlp(canonical_params(1, 4, 3)), leaf_input(_x(1, 4))
    block = model.block
    model.block = lambda x: (runs.append(1), block(x))[1]
    PORT.run(model, x).backward(torch.ones(3))
    assert len(runs) == 2


def test_gradients_flow_to_a_tensor_x_which_is_never_modified():
    x = torch.tensor(_x(5, 4), requires_grad=True)
    before = x.detach().clone()
    PORT.nn_checkpoint_forward(3, x, 5).backward(torch.ones(5))
    assert torch.equal(x.detach(), before)
    expected = torch.tensor(_x(5, 4), requires_grad=True)
    EAGER.nn_checkpoint_forward(3, expected, 5).backward(torch.ones(5))
    assert torch.equal(x.grad, expected.grad)


def test_deepspeeds_checkpoint_refuses_autograd_grad():
    # Why the port's VJP and instrument call .backward(): a reentrant checkpoint.
    model, x = build_mlp(canonical_params(1, 3, 2)), leaf_input(_x(1, 3))
    out = PORT.run(model, x)
    with pytest.raises(RuntimeError, match=r"not compatible with \.grad\(\)"):
        torch.autograd.grad(out, [x], torch.ones(2))


def test_the_output_needs_an_input_that_requires_grad():
    # A reentrant checkpoint's output requires grad only if an input does:
    # parameters that require grad are not enough (upstream, pinned).
    model = build_mlp(canonical_params(1, 3, 2))
    out = deepspeed.checkpointing.checkpoint(model.block, torch.ones(3))
    assert not out.requires_grad
