"""bench --schedules through the process protocol on tfjs at small L: the child declares its
schedules in its hello, builds each from the placement tree the suite sends, and each declared
schedule's values equal the canonical's (Flax nn.remat_scan) within the stack's bound, its
regions are the placement's and its forward matmuls the model's exactly (each outermost
tf.customGrad region reruns its inner regions by hand, every level once)."""

from __future__ import annotations

import pytest

from conformance import benchmark
from conformance.benchmark import schedules as bench
from conformance.benchmark.measure import Settings, make_data
from implementations.schedules import Schedule, regions
from tests.support import schedules_kit as kit

jax_bench = pytest.importorskip("implementations.stacks.jax.block", reason="the canonical is JAX's")

SETTINGS = Settings(depths=(1, 2, 4, 8), batch=4, features=8, repeats=1, max_repeats=1)


@pytest.fixture(scope="module")
def tfjs_bench(node):
    loaded, skipped = benchmark.load_frameworks(["tfjs"])
    if "tfjs" in skipped:
        pytest.fail(f"node is installed, yet the tfjs bench is skipped: {skipped['tfjs']}")
    return loaded["tfjs"]


def _cases(module):
    return [
        (schedule, L)
        for L in SETTINGS.depths
        for schedule in bench.schedules_at(L)
        if bench.expresses(module, schedule)
    ]


def test_hello_declares_every_schedule_but_budget_with_a_reason(tfjs_bench):
    assert set(tfjs_bench.SCHEDULES) == kit.ALL_BUT_BUDGET
    assert "budget" in tfjs_bench.SCHEDULES_NOT_EXPRESSIBLE
    with pytest.raises(ValueError, match="not expressible in tfjs"):
        tfjs_bench.schedule_case(Schedule.parse("budget(0.5)"), make_data(SETTINGS, 2))


def test_each_declared_schedule_equals_the_canonical_and_is_the_model(tfjs_bench):
    cases = _cases(tfjs_bench)
    assert len(cases) >= 10
    for schedule, L in cases:
        static = tfjs_bench.schedule_case(schedule, make_data(SETTINGS, L)).measure()
        result = bench.result_of("tfjs", tfjs_bench, schedule, static, L, SETTINGS)
        bench.check_values(result, tfjs_bench, jax_bench, schedule, kit.REFERENCES)
        label = f"{schedule.label} at L={L}"
        assert result.values_within, f"{label}: {result.values_worst} x the bound"
        assert result.regions == result.model_regions, label
        assert result.forward_matmuls[0] == 2 * L, label  # the forward pass: each block once
        # each region's rerun stops before its last block's a @ W2 where that item is a block
        early = sum(1 for _, r in regions(schedule.placement(L)) if isinstance(r.items[-1], int))
        assert sum(result.forward_matmuls) == result.model_matmuls - early, label
        assert static.peak_bytes is None, label  # tf.tidy frees at its end only


def test_a_placement_that_skips_a_block_is_refused_naming_it(tfjs_bench):
    data = make_data(SETTINGS, 2)
    assert len(data.blocks) == 2
    with pytest.raises(ValueError, match="expected block 1, got 2"):
        tfjs_bench.block.CHILD.call("place", placement=[0, 2], depth=2, policies=[])


def test_protocol_doc_names_what_the_python_side_sends_and_reads(tfjs_bench):
    import inspect

    from tests.support.helpers import ROOT

    doc = (ROOT / "docs" / "PROTOCOL.md").read_text().split("### Schedules", 1)[1]
    doc = doc.split("\n### ", 1)[0]
    source = inspect.getsource(tfjs_bench.block) + inspect.getsource(tfjs_bench.instrument)
    for name in ("tensor", "read", "place", "vjp", "release", "watch", "record", "evaluations"):
        assert f'"{name}"' in source or f"{name}=" in source, name  # an op, or a field sent
        assert f'"{name}"' in doc or f"`{name}`" in doc, name
    assert tfjs_bench.block.CHILD.hello["region_policies"] == ["", "save-mm"]
    assert "`region_policies`" in doc
