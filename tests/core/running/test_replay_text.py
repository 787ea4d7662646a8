"""A failure's text on the command line (issue 60, item 4): Hypothesis's advice to add
`@reproduce_failure(...)` "as a decorator on your test function" is left out, and its blob
goes into the project's own replay command (`--reproduce`)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.running.runner import _BLOB, without_decorator_advice


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
