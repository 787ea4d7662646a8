"""The torch bench stacks under `bench --policies`: saved bytes per policy against hand-derived
counts, and the policies each declares.

Per block of the torch stack (B x F float32 each): `none` keeps x and a
(relu's output); `full` keeps x; eager `save_dots` keeps x and the cached
outputs of both addmms, h and y, where a block's y is the next block's x
(one storage). Over L blocks, in units of the analytic minimum L*B*F*4:
none 2, full 1, save_dots 3L storages less the L - 1 that a block's y shares
with the next block's x: (3L - (L - 1)) / L.
"""

from __future__ import annotations

import pytest

from conformance.benchmark import policies
from conformance.benchmark.measure import Settings, make_data
from implementations.measuring.driver import bench_module
from implementations.stacks.torch import compiled_bench

bench = bench_module("implementations.stacks.torch.block")  # eager torch: the generic driver

SMALL = Settings(depths=(2,), batch=8, features=4, repeats=1, max_repeats=1)


@pytest.mark.parametrize(
    ("policy", "ratio"), [("none", 2.0), ("full", 1.0), ("save_dots", (3 * 2 - 1) / 2)]
)
def test_torch_policy_saved_bytes_match_hand_derived_counts(policy, ratio):
    case = bench.policy_case(policy, make_data(SMALL, 2))
    static = case.measure()
    result = policies._result("torch", case, policy, static, 2, SMALL)
    assert result.saved_ratio == ratio, static.saved


@pytest.mark.parametrize("module", [bench, compiled_bench])
def test_each_runs_none_and_full_first_and_never_what_it_cannot_express(module):
    assert module.POLICIES[:2] == ("none", "full")
    assert not set(module.POLICIES) & set(module.NOT_EXPRESSIBLE)


def test_the_compiled_stack_runs_every_budget():
    budgets = [p for p in compiled_bench.POLICIES if p.startswith("budget")]
    assert budgets == ["budget(0)", "budget(0.25)", "budget(0.5)", "budget(0.75)", "budget(1)"]
