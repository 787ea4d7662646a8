"""The scaling bench (`conformance.benchmark.scale`): bytes per rank fall with N, as analysed."""

from __future__ import annotations

import pytest

from conformance.benchmark import scale

pytest.importorskip("jax")

SMALL = scale.ScaleSettings(ranks=(1, 2, 4), batch=8, dim=16, features=8, repeats=3)


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
    assert table.count("| jax_spmd |") == 6
