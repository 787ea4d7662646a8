"""`bench --policies`: the ratios, the budget verdict, the table and the plot. No timed
assertions: the samples here are made up or unread.

The stacks' own cases are tested in their folders (tests/torch/test_torch_bench_policies.py);
here the policy bench's core, on made-up results and stand-in bench modules.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from conformance.benchmark import policies
from conformance.benchmark.measure import Settings

SMALL = Settings(depths=(2,), batch=8, features=4, repeats=1, max_repeats=1)


def _result(framework: str, policy: str, saved: int, seconds=(), depth: int = 2):
    return policies.PolicyResult(
        framework=framework,
        variant="",
        policy=policy,
        depth=depth,
        batch=8,
        features=4,
        saved_count=1,
        saved_bytes=saved,
        analytic_minimum=depth * 8 * 4 * 4,
        matmuls=None,
        residuals=[],
        step_seconds=list(seconds),
    )


class _Stack:
    """A bench module as the policy bench sees it: its policies and what it cannot express."""

    POLICIES = ("none", "full", "budget(0)", "budget(1)")
    NOT_EXPRESSIBLE: ClassVar[dict[str, str]] = {"offload_dots": "no host memory here"}


def test_a_bench_module_s_own_policy_case_is_used_else_its_depth_case():
    made = []
    module = type("M", (), {"configurations": staticmethod(lambda: [("v", "none")])})
    module.build = staticmethod(lambda variant, mode, data: made.append((variant, mode)))
    policies.builder(module)("full", None)
    assert made == [("v", "full")]
    module.policy_case = staticmethod(lambda policy, data: made.append(("own", policy)))
    policies.builder(module)("save_dots", None)
    assert made[-1] == ("own", "save_dots")
    assert policies.policies_of(_Stack) == _Stack.POLICIES
    assert policies.policies_of(object()) == ()


def test_time_ratios_are_per_repeat_against_the_same_framework_s_none():
    results = [
        _result("torch", "none", 10, (1.0, 2.0)),
        _result("torch", "full", 5, (1.5, 2.0)),
        _result("jax", "none", 10, (4.0, 4.0)),
        _result("jax", "full", 5, (2.0, 6.0)),
    ]
    policies.attach_timings(results, [r.step_seconds for r in results])
    assert [r.time_ratios for r in results] == [[1.0, 1.0], [1.5, 1.0], [1.0, 1.0], [0.5, 1.5]]
    assert results[3].time_ratio == 1.0
    assert results[3].time_ratio_quartiles is None  # under 4 repeats: no quartiles claimed


def test_the_budget_verdict_reads_saved_bytes_in_budget_order():
    falling = [
        _result("torch_compile", f"budget({b:g})", s) for b, s in ((1, 30), (0.5, 20), (0, 10))
    ]
    assert policies.budget_monotone(falling) == {("torch_compile", 2): True}
    rising = [_result("torch_compile", f"budget({b:g})", s) for b, s in ((1, 10), (0, 20))]
    assert policies.budget_monotone(rising) == {("torch_compile", 2): False}
    one = [_result("torch_compile", "budget(0)", 1)]
    assert policies.budget_monotone(one) == {("torch_compile", 2): None}
    assert policies.budget_monotone([_result("torch", "none", 1)]) == {}


def test_the_table_says_what_did_not_run_and_what_failed():
    results = [_result("torch", "none", 256, (1.0,) * 4), _result("torch", "full", 128, (1.2,) * 4)]
    policies.attach_timings(results, [r.step_seconds for r in results])
    data = policies.report_data(SMALL, {"torch": _Stack}, results, {"L=2 torch · x": "Boom: no"})
    assert data["kind"] == "bench-policies"
    table = policies.markdown(data)
    assert "| torch | full | 2 | 1.20 (IQR 1.20 to 1.20) | n=4 · IQR 0% |" in table
    assert "- torch · offload_dots: not expressible (no host memory here)" in table
    assert "- ✗ L=2 torch · x failed: Boom: no" in table


def test_the_plot_is_drawn_per_framework(tmp_path):
    pytest.importorskip("matplotlib")
    results = [_result("torch", "none", 256, (1.0,) * 4), _result("jax", "full", 128, (1.0,) * 4)]
    policies.attach_timings(results, [r.step_seconds for r in results])
    from conformance.benchmark.policy_plot import plot

    assert plot(results, tmp_path / "p.png") is None
    assert (tmp_path / "p.png").stat().st_size > 0
    assert plot([], tmp_path / "q.png") == "no policy was measured"


def test_a_framework_without_a_policy_case_is_skipped_with_the_reason():
    import types

    declares = types.SimpleNamespace(POLICIES=("none", "full"))
    silent = types.SimpleNamespace()
    kept, skipped = policies.with_policies({"a": declares, "b": silent})
    assert kept == {"a": declares}
    assert skipped == {
        "b": "its bench module declares no POLICIES, so the policy bench has no case for it"
    }
