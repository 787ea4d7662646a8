"""A failure's text on the command line (issue 60, item 4): Hypothesis's advice to add
`@reproduce_failure(...)` "as a decorator on your test function" is left out, and its blob
goes into the project's own replay command (`--reproduce`); its explanation of the suite's own
lines is never made."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checking.properties import BY_ID
from conformance.running.runner import _BLOB, run_property, without_decorator_advice
from tests.support.helpers import port_or_skip


def _hypothesis_notes() -> str:
    """The notes Hypothesis puts on a real failure, with its blob printed."""

    @settings(print_blob=True, derandomize=True, database=None)
    @given(st.integers())
    def fails(number):
        assert number < 10

    try:
        fails()
    except AssertionError as error:
        return "\n".join(error.__notes__)
    raise AssertionError("the test did not fail")


def test_the_decorator_advice_is_left_out_and_the_example_kept():
    notes = _hypothesis_notes()
    assert "as a decorator on your test function" in notes  # Hypothesis still says it
    kept = without_decorator_advice(notes)
    assert "decorator" not in kept
    assert "@reproduce_failure" not in kept
    assert "number=10" in kept  # the failing example stays
    assert _BLOB.search(notes)  # the blob is still found, for the replay command


def test_a_failure_s_text_has_no_explanation_of_the_suite_s_own_lines():
    # Hypothesis's explain phase lists lines of the suite's code that only failing examples
    # ran ("Explanation: These lines were always and only run by failing test cases"):
    # nothing there is about the port, so the runner never runs that phase.
    canonical, port = port_or_skip("flax_linen"), port_or_skip("jax_checkpoint")

    class OffForWideOutputs(type(port)):
        name = "off_for_wide"

        def forward(self, params, x, *, checkpoint=True):
            out = super().forward(params, x, checkpoint=checkpoint)
            return out + 1 if params.features >= 4 else out

    outcome = run_property(BY_ID["b"], OffForWideOutputs(), lambda: canonical, max_examples=30)
    assert outcome.status == "fail"
    assert "x=array(" in outcome.message  # the failing example is there
    assert "Explanation" not in outcome.message
    assert "always and only run by failing" not in outcome.message
