"""Issue 61, case 2 (its second half): shrinking a failure is bounded in time.

A port whose every example compiles anew (torch_compile, in a temporary directory its
compiler could not take) shrank one failure for over 15 minutes. `REMAT_SHRINK_SECONDS`
(60 s by default) bounds it; a failure cut short says so.
"""

from __future__ import annotations

import pytest
from hypothesis.internal.conjecture import engine

from conformance.checking.properties import BY_ID
from conformance.running import runner
from conformance.running.runner import run_property
from tests.support.helpers import port_or_skip


def _off_for_wide():
    port = port_or_skip("jax_checkpoint")

    class OffForWideOutputs(type(port)):
        """Right for F < 4, off by one from there on: Hypothesis shrinks to F = 4."""

        name = "off_for_wide"

        def forward(self, params, x, *, checkpoint=True):
            out = super().forward(params, x, checkpoint=checkpoint)
            return out + 1 if params.features >= 4 else out

    return OffForWideOutputs()


@pytest.mark.parametrize("seconds", ["0", ""])
def test_a_shrink_stops_at_its_bound_and_says_so(monkeypatch, seconds):
    canonical = port_or_skip("flax_linen")
    monkeypatch.setenv(runner.SHRINK_ENV, seconds)
    saved = engine.MAX_SHRINKING_SECONDS
    outcome = run_property(BY_ID["b"], _off_for_wide(), lambda: canonical, max_examples=30)
    assert saved == engine.MAX_SHRINKING_SECONDS  # Hypothesis's own, for everyone else
    assert outcome.status == "fail"
    cut = "shrinking stopped after 0 s, the bound REMAT_SHRINK_SECONDS sets"
    minimal = "x=array([0., 0., 0.], dtype=float32)" in outcome.message
    if seconds == "0":  # cut at once: said, and not shrunk to the smallest
        assert cut in outcome.message
        assert not minimal, outcome.message
    else:  # 60 s is plenty here: shrunk to the smallest failing case, nothing said
        assert runner.shrink_seconds() == runner.SHRINK_SECONDS == 60.0
        assert "shrinking stopped" not in outcome.message
        assert minimal, outcome.message


def test_a_bad_bound_names_its_variable(monkeypatch):
    monkeypatch.setenv(runner.SHRINK_ENV, "soon")
    with pytest.raises(ValueError, match="REMAT_SHRINK_SECONDS='soon'"):
        runner.shrink_seconds()
