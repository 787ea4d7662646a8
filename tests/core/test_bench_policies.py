"""`bench --policies`: saved bytes per policy against hand-derived counts, the ratios, the budget
verdict, the table and the plot. No timed assertions: the samples here are made up or unread.

Per block of the torch stack (B x F float32 each): `none` keeps x and a
(relu's output); `full` keeps x; eager `save_dots` keeps x and the cached
outputs of both addmms, h and y, where a block's y is the next block's x
(one storage). Over L blocks, in units of the analytic minimum L*B*F*4:
none 2, full 1, save_dots 3L storages less the L - 1 that a block's y shares
with the next block's x: (3L - (L - 1)) / L.
"""

from __future__ import annotations

import pytest

from conformance.bench import policies
from conformance.bench.measure import Settings, make_data

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


@pytest.mark.parametrize(
    ("policy", "ratio"), [("none", 2.0), ("full", 1.0), ("save_dots", (3 * 2 - 1) / 2)]
)
def test_torch_policy_saved_bytes_match_hand_derived_counts(policy, ratio):
    pytest.importorskip("torch")
    case = policies._torch_case(policy, make_data(SMALL, 2))
    static = case.measure()
    result = policies._result("torch", case, policy, static, 2, SMALL)
    assert result.saved_ratio == ratio, static.saved


def test_every_framework_runs_none_and_full_first_and_torch_compile_every_budget():
    for name, names in policies.POLICIES.items():
        assert names[:2] == ("none", "full"), name
        assert not set(names) & set(policies.NOT_RUN.get(name, {})), name
    budgets = [p for p in policies.POLICIES["torch_compile"] if p.startswith("budget")]
    assert budgets == ["budget(0)", "budget(0.25)", "budget(0.5)", "budget(0.75)", "budget(1)"]


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
    assert policies.budget_monotone(falling) == {2: True}
    rising = [_result("torch_compile", f"budget({b:g})", s) for b, s in ((1, 10), (0, 20))]
    assert policies.budget_monotone(rising) == {2: False}
    assert policies.budget_monotone([_result("torch", "none", 1)]) == {2: None}


def test_the_table_says_what_did_not_run_and_what_failed():
    results = [_result("torch", "none", 256, (1.0,) * 4), _result("torch", "full", 128, (1.2,) * 4)]
    policies.attach_timings(results, [r.step_seconds for r in results])
    table = policies.markdown(SMALL, results, {"L=2 torch · x": "Boom: no"}, ["torch"])
    assert "| torch | full | 2 | 1.20 (IQR 1.20 to 1.20) | 4 |" in table
    assert "torch · offload_dots: not expressible" in table
    assert "**L=2 torch · x failed**: Boom: no" in table


def test_the_plot_is_drawn_per_framework(tmp_path):
    pytest.importorskip("matplotlib")
    results = [_result("torch", "none", 256, (1.0,) * 4), _result("jax", "full", 128, (1.0,) * 4)]
    policies.attach_timings(results, [r.step_seconds for r in results])
    from conformance.bench.policy_plot import plot

    assert plot(results, tmp_path / "p.png") is None
    assert (tmp_path / "p.png").stat().st_size > 0
    assert plot([], tmp_path / "q.png") == "no policy was measured"


def test_a_framework_without_a_policy_case_is_skipped_with_the_reason(tmp_path):
    from tests.helpers import run_cli

    done = run_cli("bench", "--policies", "--framework", "tfjs", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "skip tfjs: the policy bench has no case for it" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr
