"""`implementations.measuring.stacked`: a placement as one function of x and the parameters,
each block given its own four parameters, each region its blocks' and its own items nested."""

from __future__ import annotations

from implementations.measuring.placement import Placement
from implementations.measuring.stacked import stacked


def test_the_blocks_run_in_order_with_their_parameters_and_the_regions_nest():
    calls = []

    def block(x, *params):
        calls.append(params)
        return x + 1

    def region(item):
        calls.append(("chosen", len(item.blocks)))  # before its inner regions are built

        def around(inner):
            def entered(x, *params):
                calls.append(("region", len(params)))
                return inner(x, *params)

            return entered

        return around

    placement = Placement.of("binomial(2)", 4)
    assert str(placement) == "[0] [[1] 2] 3"
    run = stacked(placement.items, block, region)
    assert calls == [("chosen", 1), ("chosen", 2), ("chosen", 1)]  # outer before inner
    calls.clear()
    assert run(0, *range(16)) == 4  # four blocks ran
    assert calls == [
        ("region", 4),
        (0, 1, 2, 3),
        ("region", 8),
        ("region", 4),
        (4, 5, 6, 7),
        (8, 9, 10, 11),
        (12, 13, 14, 15),
    ]
