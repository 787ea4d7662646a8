"""The scaling bench (`conformance.benchmark.scale`): bytes per rank fall with N, as analysed."""

from __future__ import annotations

import pytest

from conformance.benchmark import scale

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

pytest.importorskip("jax")

SMALL = scale.ScaleSettings(ranks=(1, 2, 4), nodes=(1,), batch=8, dim=16, features=8, repeats=3)
#: The two-node rows: 2 ranks, one per torchrun node or JAX process (`REMAT_SCALE_NODES=2`).
TWO_NODES = scale.ScaleSettings(ranks=(2,), nodes=(2,), batch=8, dim=16, features=8, repeats=3)


def test_the_analytic_minimum_is_x_s_rows_and_without_the_checkpoint_the_relu_output():
    assert scale.minimum_bytes(SMALL, 2, checkpoint=True) == 4 * 16 * 4
    assert scale.minimum_bytes(SMALL, 2, checkpoint=False) == 4 * (16 + 8) * 4


def test_a_batch_that_does_not_divide_by_a_rank_count_is_refused():
    with pytest.raises(ValueError, match="batch=6"):
        scale.ScaleSettings(ranks=(1, 4), batch=6)


@pytest.fixture(scope="module")
def spmd_rows():
    rows, failed = scale.run(SMALL, ["jax_spmd"])
    assert failed == {}
    return rows


def test_spmd_bytes_per_rank_fall_with_n_and_meet_the_minimum_with_the_checkpoint(spmd_rows):
    on = [r for r in spmd_rows if r.checkpoint]
    assert [r.ranks for r in on] == [1, 2, 4]
    assert [r.worst_kept for r in on] == [8 * 16 * 4, 4 * 16 * 4, 2 * 16 * 4]
    off = [r for r in spmd_rows if not r.checkpoint]
    for row in off:
        assert row.worst_kept >= row.minimum_bytes
    assert off[0].worst_kept > off[1].worst_kept > off[2].worst_kept
    for row in spmd_rows:
        median, iqr, n = row.spread()
        assert n == 3
        assert median > 0
        assert iqr >= 0
    table = scale.markdown(spmd_rows, SMALL, {})
    assert table.count("| jax_spmd | 1 |") == 6


def test_the_default_sweep_adds_two_node_rows_where_n_divides():
    assert scale.ScaleSettings().runs() == [(1, 1), (1, 2), (1, 4), (2, 2), (2, 4)]


@pytest.fixture(scope="module")
def two_node_rows():
    rows, failed = scale.run(TWO_NODES, ["torch_fsdp", "jax_spmd"])
    assert failed == {}
    return rows


@pytest.mark.slow(reason="10 s alone: two torchrun nodes and two JAX processes, timed")
def test_two_node_rows_split_the_batch_over_the_nodes_with_n_and_iqr(two_node_rows):
    assert {(r.engine, r.nodes, r.ranks, r.checkpoint) for r in two_node_rows} == {
        (engine, 2, 2, checkpoint)
        for engine in ("torch_fsdp", "jax_spmd")
        for checkpoint in (True, False)
    }
    for row in two_node_rows:
        if row.checkpoint:  # x's 4 rows on each rank, nothing else
            assert row.kept_bytes == [4 * 16 * 4] * 2
        else:
            assert min(row.kept_bytes) >= row.minimum_bytes
        median, iqr, n = row.spread()
        assert (n, median > 0, iqr >= 0) == (3, True, True)
    table = scale.markdown(two_node_rows, TWO_NODES, {})
    assert table.count("| torch_fsdp | 2 | 2 |") == table.count("| jax_spmd | 2 | 2 |") == 2
