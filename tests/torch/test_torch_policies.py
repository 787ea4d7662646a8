"""Remat policies in torch, eager and compiled: what each one saves, by role, and the matmuls
its backward pass runs; and torch's documented degradations, pinned.

The expected sets are derived by hand from the MLP
x -> h = addmm(b1, x, W1^T) -> a = relu(h) -> y = addmm(b2, a, W2^T):

- Its backward pass without recomputation runs 4 matmuls (the gradients of
  x and W1, a and W2); recomputing the first layer adds its addmm: 5.
- Eager `none` keeps x (for W1's gradient) and a (relu's backward reads its
  output; W2's gradient reads it too). `full` keeps x and reruns addmm and
  relu. `save_dots` caches both addmm outputs, h and y (y is never read),
  and reruns relu only.
- Compiled, the partitioner keeps only what the backward graph reads:
  `save_dots` and `save_named` keep x and h, reruns relu; `none` keeps x, a
  and relu's mask.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from implementations.policies import FULL, NONE, Policy  # noqa: E402
from implementations.stacks.numpy import canonical_params  # noqa: E402
from implementations.stacks.torch import (  # noqa: E402
    instrument,
    leaf_input,
    pytorch,
)
from implementations.stacks.torch import policies as torch_policies  # noqa: E402
from implementations.stacks.torch.mlp import build_mlp  # noqa: E402
from implementations.stacks.torch.stack import model_record  # noqa: E402

PORT = pytorch.PyTorch()
SAVE_DOTS = Policy("save_dots")
GRADS = ("w1", "b1", "w2", "b2", "x")


def _x(dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=dim).astype(np.float32)


def _eager_record(params, x, policy_fn, *, tag_h: bool = False, read_cache: bool = True):
    """torch's eager instrument on the MLP under a selective policy given as a function."""
    regions = instrument.RegionCounter()
    cache = torch_policies.SelectiveCache(policy_fn)
    x = leaf_input(x)

    def run():
        context_fn = torch_policies.combine(regions.context_fn, cache.context_fn)
        model = build_mlp(params, context_fn=context_fn, tag_h=tag_h)
        return model(x), model

    return model_record(run, x, regions, cache if read_cache else None)


# ---------------------------------------------------------------------------
# Eager: the declared policies
# ---------------------------------------------------------------------------

EAGER = {  # policy -> (saved roles, backward matmuls, recomputed)
    "none": ({"x", "a"}, 4, {}),
    "full": ({"x"}, 5, {"aten.addmm": 1, "aten.relu": 1}),
    "save_dots": ({"x", "h", "y"}, 4, {"aten.relu": 1}),
}


def test_eager_declares_what_it_runs():
    assert set(PORT.policies) == set(EAGER)
    assert set(PORT.inexpressible) == {"save_named", "offload_dots", "budget"}


@pytest.mark.parametrize("shape", [(1, 1), (3, 4), (7, 33)])
@pytest.mark.parametrize("name", list(EAGER))
def test_eager_policy_saves_its_roles_and_runs_its_matmuls(name, shape):
    params = canonical_params(3, *shape)
    record = PORT.backward_record(params, _x(shape[0]), checkpoint=Policy(name))
    roles, matmuls, recomputed = EAGER[name]
    assert record.saved_roles == roles, record.saved
    assert record.backward_matmuls == matmuls
    assert dict(record.recomputed) == recomputed
    assert all(t.memory_space == "device" for t in record.kept)
    assert record.checkpoint_regions == (0 if name == "none" else 1)
    assert record.tags == ()  # no policy eager torch runs tags h


def test_the_contract_s_booleans_are_none_and_full():
    params, x = canonical_params(0, 4, 5), _x(4)
    assert PORT.backward_record(params, x, checkpoint=True).saved_roles == {"x"}
    assert PORT.backward_record(params, x, checkpoint=False).saved_roles == {"x", "a"}


@pytest.mark.parametrize("policy", [NONE, FULL, SAVE_DOTS])
def test_every_eager_policy_gives_the_no_remat_gradients_bit_for_bit(policy):
    params, x = canonical_params(5, 6, 9), _x(6, 1)
    cotangent = np.random.default_rng(2).normal(size=9).astype(np.float32)
    plain = PORT.vjp(params, x, cotangent, checkpoint=False)
    grads = PORT.vjp(params, x, cotangent, checkpoint=policy)
    for name in GRADS:
        np.testing.assert_array_equal(getattr(grads, name), getattr(plain, name), err_msg=name)
    np.testing.assert_array_equal(
        PORT.forward(params, x, checkpoint=policy), PORT.forward(params, x, checkpoint=False)
    )


@pytest.mark.parametrize("name", ["save_named", "offload_dots", "budget(0.5)"])
def test_an_inexpressible_policy_is_refused_naming_checkpoint_and_the_reason(name):
    policy = Policy.parse(name)
    with pytest.raises(ValueError, match=r"checkpoint=.*pytorch") as error:
        PORT.forward(canonical_params(0, 2, 2), _x(2), checkpoint=policy)
    assert PORT.inexpressible[policy.name] in str(error.value)


def test_the_cache_is_invisible_to_saved_tensor_hooks():
    # Why the instrument reads the cache: the hooks alone see x only.
    params, x = canonical_params(0, 4, 4), _x(4)
    hooked = _eager_record(params, x, torch_policies.save_dots, read_cache=False)
    assert hooked.saved_roles == {"x"}
    assert _eager_record(params, x, torch_policies.save_dots).saved_roles == {"x", "h", "y"}


def test_a_stateful_policy_works_eagerly():
    # Called once per operator: "save the first matmul" saves h, not y.
    record = _eager_record(canonical_params(0, 4, 4), _x(4), torch_policies.stateful_first_matmul())
    assert record.saved_roles == {"x", "h"}
    assert record.backward_matmuls == 4


# ---------------------------------------------------------------------------
# Eager: documented degradations (torch 2.13), pinned. Each fails the day torch changes.
# ---------------------------------------------------------------------------


def test_pinned_eager_must_cpu_offload_is_recompute():
    record = _eager_record(canonical_params(0, 4, 4), _x(4), torch_policies.offload_dots)
    assert record.saved_roles == {"x"}  # nothing cached, nothing offloaded
    assert record.recomputed == {"aten.addmm": 1, "aten.relu": 1}
    assert record.backward_matmuls == 5


def test_pinned_eager_saving_the_tagged_h_still_reruns_its_addmm():
    record = _eager_record(canonical_params(0, 4, 4), _x(4), torch_policies.save_named, tag_h=True)
    assert record.saved_roles == {"x", "h"}  # h is cached ...
    assert record.recomputed == {"aten.addmm": 1, "aten.relu": 1}  # ... and made again
    assert record.backward_matmuls == 5
    assert record.tags == ("h",)


# ---------------------------------------------------------------------------
# Roles: the instruments' own rules, on chains whose roles are known
# ---------------------------------------------------------------------------


def test_eager_roles_name_a_bare_matmul_d1_and_a_biased_one_h():
    roles = instrument.Roles()
    x, w, b = torch.ones(2, 3), torch.ones(3, 3), torch.ones(3)
    with instrument.Ops(roles):
        d1 = x @ w  # aten.mm
        h = d1 + b
        a = torch.relu(h)
        mask = a > 0
        y = torch.addmm(b, a, w)

    def role(t):
        return roles.role(t.untyped_storage().data_ptr())

    assert [role(t) for t in (d1, h, a, mask, y)] == ["d1", "h", "a", "mask", "y"]


def test_the_pinned_eager_degradations_are_documented():
    from conformance.checking import policy_expectations

    for policy in ("offload_dots", "save_named"):
        (documented,) = policy_expectations.degradations(PORT, policy)
        assert documented.measured.startswith("torch 2.13"), documented
