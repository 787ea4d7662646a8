"""A replayed failure (`--reproduce`) says its case in the failure's message, never among the
port's printed lines (issue 76, item 7), and its replay command keeps the blob."""

from __future__ import annotations

import pytest

from conformance.checking.properties import BY_ID
from conformance.running.runner import run_property
from tests.support.helpers import port_or_skip


@pytest.fixture
def on_off_differ():
    """hips_autograd (numpy: quick) with its checkpointed forward off by 1: (d) fails."""
    base = port_or_skip("hips_autograd")

    class OnOffDiffer(type(base)):
        name = "on_off_differ"

        def forward(self, params, x, *, checkpoint=True):
            out = super().forward(params, x, checkpoint=checkpoint)
            return out + 1 if checkpoint else out

    return OnOffDiffer()


def test_a_replay_puts_hypothesis_s_case_in_the_message_not_the_output(on_off_differ, capfd):
    # The canonical port as a run hands it: the bank's entries are keyed by it (with none, a
    # cache that already holds (d)'s cases skipped the property: "not available").
    canonical = port_or_skip("flax_linen")
    first = run_property(BY_ID["d"], on_off_differ, lambda: canonical, max_examples=5)
    assert first.status == "fail"
    assert first.reproduce  # the blob its replay command carries
    capfd.readouterr()
    replayed = run_property(
        BY_ID["d"], on_off_differ, lambda: canonical, max_examples=5, reproduce=first.reproduce
    )
    printed = capfd.readouterr()
    assert replayed.status == "fail"
    assert "Failing test case" not in printed.out + printed.err  # not the port's lines
    assert "Failing test case" in replayed.message
    assert "x=array(" in replayed.message
    assert replayed.reproduce == first.reproduce
