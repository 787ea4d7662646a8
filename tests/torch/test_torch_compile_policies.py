"""Remat policies under torch.compile: the saved roles and backward matmuls of each declared
policy, read off AOTAutograd's partitioned graphs; torch's degradations under compile, pinned;
and the two compiled-policy mutants' bugs.

Hand-derived (see `test_torch_policies.py` for the MLP's roles): the
partitioner keeps only what the backward graph reads, so `save_dots` and
`save_named` keep x and h and rerun relu (4 matmuls), `full` and `budget(0)`
keep x and rerun the first layer (5), and `none` keeps x, a and relu's mask.
`budget(1)` is the partitioner's default: here, with one vector of
activations against two weight matrices, it recomputes nothing, as `none`.

Each policy compiles once for every size above 1 (a second or two each, warm).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from implementations.policies import Policy  # noqa: E402
from implementations.stacks.numpy import canonical_params  # noqa: E402
from implementations.stacks.torch import leaf_input, torch_compile  # noqa: E402
from implementations.stacks.torch import policies as torch_policies  # noqa: E402
from implementations.stacks.torch.compiled import CompiledModule  # noqa: E402
from implementations.stacks.torch.mlp import build_mlp  # noqa: E402
from implementations.stacks.torch.torch_compile_mutants import (  # noqa: E402
    BudgetIgnored,
    StatefulPolicyUnderCompile,
)

PORT = torch_compile.TorchCompile()
SMALL, LARGE = (8, 8), (32, 32)
NONE = ({"x", "a", "mask"}, 4)
EXPECTED = {  # (policy, shape) -> (saved roles, backward matmuls)
    ("none", SMALL): NONE,
    ("none", LARGE): NONE,
    ("full", SMALL): ({"x"}, 5),
    ("save_dots", SMALL): ({"x", "h"}, 4),
    ("save_dots", LARGE): ({"x", "h"}, 4),
    ("save_named", SMALL): ({"x", "h"}, 4),
    ("budget(0)", SMALL): ({"x"}, 5),
    ("budget(1)", SMALL): NONE,
}


def _x(dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=dim).astype(np.float32)


def _compiled_record(model, dim: int, compiled: CompiledModule):
    x = leaf_input(_x(dim))
    with compiled.recorder.capture() as seen:
        out = compiled(model, x)
    torch.autograd.grad(out, [x, *model.parameters()], torch.ones_like(out))
    return seen.record(), seen.last()[0]


def test_compiled_declares_what_it_runs():
    assert set(PORT.policies) == {"none", "full", "save_dots", "save_named", "budget"}
    assert set(PORT.inexpressible) == {"offload_dots"}


@pytest.mark.parametrize(("name", "shape"), list(EXPECTED))
def test_compiled_policy_saves_its_roles_and_runs_its_matmuls(name, shape):
    record = PORT.backward_record(
        canonical_params(1, *shape), _x(shape[0]), checkpoint=Policy.parse(name)
    )
    roles, matmuls = EXPECTED[name, shape]
    assert record.saved_roles == roles, record.saved
    assert record.backward_matmuls == matmuls
    assert all(t.memory_space == "device" for t in record.kept)
    assert record.tags == (("h",) if name == "save_named" else ())


@pytest.mark.parametrize("name", ["full", "save_dots", "save_named", "budget(0)", "budget(1)"])
def test_every_compiled_policy_gives_the_no_remat_gradients_bit_for_bit(name):
    params, x = canonical_params(2, *SMALL), _x(SMALL[0], 3)
    cotangent = np.random.default_rng(4).normal(size=SMALL[1]).astype(np.float32)
    plain = PORT.vjp(params, x, cotangent, checkpoint=False)
    grads = PORT.vjp(params, x, cotangent, checkpoint=Policy.parse(name))
    for grad in ("w1", "b1", "w2", "b2", "x"):
        np.testing.assert_array_equal(getattr(grads, grad), getattr(plain, grad), err_msg=grad)


def test_each_policy_compiles_through_a_call_of_its_own():
    calls = {
        name: PORT.compiled_for(Policy.parse(name))
        for name in ("none", "full", "save_dots", "save_named", "budget(0)", "budget(0.5)")
    }
    assert len({id(call) for call in calls.values()}) == len(calls)
    assert PORT.compiled_for(Policy.parse("budget(0.5)")) is calls["budget(0.5)"]


# ---------------------------------------------------------------------------
# Documented degradations under compile (torch 2.13), pinned
# ---------------------------------------------------------------------------


def test_pinned_compiled_cpu_offload_is_a_plain_save():
    context_fn = torch_policies.context_fn(torch_policies.offload_dots)
    model = build_mlp(canonical_params(0, *SMALL), context_fn=context_fn)
    record, partition = _compiled_record(model, SMALL[0], CompiledModule())
    assert record.saved_roles == {"x", "h"}  # saved, as save_dots saves it ...
    targets = {node.target for node in partition.forward.nodes}
    assert not targets & {"aten._to_copy", "aten.to", "aten.copy_"}  # ... and not moved


def test_pinned_a_stateful_policy_is_silently_ignored_under_compile():
    policy = torch_policies.stateful_first_matmul()
    model = build_mlp(canonical_params(0, *SMALL), context_fn=torch_policies.context_fn(policy))
    record, _ = _compiled_record(model, SMALL[0], CompiledModule())
    assert record.saved_roles == {"x"}  # eagerly it saves h (test_torch_policies)
    assert record.backward_matmuls == 5


class _CallableContext:
    def __call__(self):
        return torch.utils.checkpoint.create_selective_checkpoint_contexts(torch_policies.save_dots)


def test_a_callable_object_as_context_fn_makes_dynamo_raise():
    model = build_mlp(canonical_params(0, *SMALL), context_fn=_CallableContext())
    with pytest.raises(Exception, match="context_fn"):
        CompiledModule()(model, leaf_input(_x(SMALL[0])))


# ---------------------------------------------------------------------------
# The compiled-policy mutants: right values, wrong saved set
# ---------------------------------------------------------------------------


def test_the_budget_ignored_mutant_keeps_a_at_budget_zero():
    params, x = canonical_params(0, *SMALL), _x(SMALL[0])
    mutant = BudgetIgnored()
    record = mutant.backward_record(params, x, checkpoint=Policy("budget", 0.0))
    assert record.saved_roles == NONE[0]
    np.testing.assert_array_equal(
        mutant.forward(params, x, checkpoint=Policy("budget", 0.0)),
        PORT.forward(params, x, checkpoint=False),
    )


def test_the_stateful_mutant_runs_full_remat_for_save_dots():
    params, x = canonical_params(0, *SMALL), _x(SMALL[0])
    record = StatefulPolicyUnderCompile().backward_record(params, x, checkpoint=Policy("save_dots"))
    assert record.saved_roles == {"x"}
    assert record.backward_matmuls == 5


def test_the_pinned_compiled_degradations_are_documented():
    from conformance.checking import policy_expectations

    for policy in ("offload_dots", "save_dots"):
        (documented,) = policy_expectations.degradations(PORT, policy)
        assert documented.measured.startswith("torch 2.13"), documented


def test_a_mutant_of_the_compiled_port_keeps_its_expectations_under_another_name():
    from conformance.checking import policy_expectations

    for mutant in (BudgetIgnored(), StatefulPolicyUnderCompile()):
        assert policy_expectations.family(mutant) == "torch_compile"
