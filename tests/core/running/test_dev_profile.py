"""`--profile dev` is never slower than `ci` when warm (issue 60, item 3): it is derandomized,
so the example bank serves it (its cases and canonical side made once) and it draws the
shapes `ci` draws, which the compilation caches hold; random, it compiled new shapes on
every run (`torch_compile`: 21 s of a 35 s warm dev run, against a 29 s warm ci run)."""

from __future__ import annotations

from hypothesis import settings

from conformance.running import example_bank, profiles
from conformance.running.config import run_config


def test_dev_is_derandomized_and_smaller_than_ci():
    dev, ci = settings.get_profile("dev"), settings.get_profile("ci")
    assert dev.derandomize
    assert ci.derandomize
    assert dev.max_examples <= ci.max_examples
    assert profiles.TIMEOUTS["dev"] <= profiles.TIMEOUTS["ci"]


def test_a_dev_run_is_served_by_the_bank():
    before = settings.get_current_profile_name()
    try:
        config = run_config(["pytorch"], profile="dev")
        assert example_bank.derandomized()  # the runner takes the bank's path
        assert config.settings().database is None  # nothing random to keep
    finally:
        settings.load_profile(before)
