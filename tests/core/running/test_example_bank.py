"""The example bank: the same cases as Hypothesis draws, failures still found and shrunk."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings

from conformance.checking.properties import BY_ID
from conformance.running import environment, example_bank, profiles
from conformance.running.runner import run_property
from tests.support.helpers import assert_identical, port_or_skip

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Each test draws into its own cache directory, under the ci profile."""
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path))
    profiles.load("ci")


def test_the_bank_holds_what_a_derandomized_run_draws():
    prop = BY_ID["b"]
    drawn = example_bank.cases(prop, "small", 12)
    seen = []
    with example_bank.sending_cases_to(seen.append):
        settings(max_examples=12, database=None)(
            given(prop.strategy("small"))(example_bank.example)
        )()
    assert_identical(drawn, seen)
    assert len({pickle.dumps(case) for case in drawn}) > 6  # real variety, not one case


def test_a_second_call_reads_the_file_and_draws_nothing(monkeypatch):
    prop = BY_ID["f"]
    first = example_bank.cases(prop, "small", 5)
    monkeypatch.setattr(example_bank, "given", lambda *a, **k: pytest.fail("drew again"))
    assert_identical(example_bank.cases(prop, "small", 5), first)


def test_references_are_made_once_and_kept_per_canonical_port():
    prop = BY_ID["b"]
    cases = example_bank.cases(prop, "small", 3)
    calls = []

    class Reference:
        name = "fake_reference"

        def versions(self):
            return {"fake": "1"}

        def forward(self, params, x, checkpoint=True):
            calls.append(1)
            return np.zeros(params.features, np.float32)

    def make(prop, canonical, case):
        return prop.prepare(canonical, case)

    first = example_bank.references(prop, cases, Reference, make)
    again = example_bank.references(prop, cases, Reference, make)
    assert len(calls) == 3  # made once, read back the second time
    assert_identical(first, again)
    Reference.name = "another_reference"
    example_bank.references(prop, cases, Reference, make)
    assert len(calls) == 6  # another canonical port: made again


def test_a_worker_waiting_for_another_to_make_an_entry_says_so(tmp_path):
    """The wait is progress to the supervisor: a short --timeout must not stop the waiter."""
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path / "entry.entry"
    noted, result = threading.Event(), []
    with open(tmp_path / "entry.lock", "w") as held:  # another worker, making it
        fcntl.flock(held, fcntl.LOCK_EX)
        waiter = threading.Thread(
            target=lambda: result.append(example_bank._kept(path, lambda: [7], noted.set))
        )
        waiter.start()
        assert noted.wait(timeout=60), "the waiting side never said it was waiting"
        assert not result  # still waiting for the lock
        fcntl.flock(held, fcntl.LOCK_UN)
    waiter.join(timeout=60)
    assert result == [[7]]


def test_a_failure_in_the_bank_is_shrunk_by_hypothesis():
    port = port_or_skip("jax_checkpoint")
    canonical = port_or_skip("flax_linen")

    class OffForWideOutputs(type(port)):
        """Right for F < 4, off by one from there on: Hypothesis shrinks to F = 4."""

        name = "off_for_wide"

        def forward(self, params, x, *, checkpoint=True):
            out = super().forward(params, x, checkpoint=checkpoint)
            return out + 1 if params.features >= 4 else out

    outcome = run_property(BY_ID["b"], OffForWideOutputs(), lambda: canonical, max_examples=30)
    assert outcome.status == "fail"
    # Hypothesis's own report of the (shrunk) failing case, and its blob for the replay.
    assert "Failing test case: example(" in outcome.message or "Falsifying" in outcome.message
    assert outcome.reproduce.startswith("off_for_wide:b_forward:")  # whose, then the blob
    assert outcome.reproduce.count(":") == 3
    # Shrunk to the smallest failing shape of the small menu, (3, 4), and x to zeros.
    assert "x=array([0., 0., 0.], dtype=float32)" in outcome.message


def test_a_failure_hypothesis_cannot_meet_again_is_still_reported():
    port = port_or_skip("jax_checkpoint")
    canonical = port_or_skip("flax_linen")

    class WrongOnce(type(port)):
        """Wrong on its 3rd forward call only: the rerun meets a right answer there."""

        name = "wrong_once"
        calls = 0

        def forward(self, params, x, *, checkpoint=True):
            WrongOnce.calls += 1
            out = super().forward(params, x, checkpoint=checkpoint)
            return out + 1 if WrongOnce.calls == 3 else out

    outcome = run_property(BY_ID["b"], WrongOnce(), lambda: canonical, max_examples=10)
    assert outcome.status == "fail"
    assert "did not meet this failure again" in outcome.message


def test_the_profiles_are_the_same_where_a_ci_variable_is_set():
    """Hypothesis loads its own "ci" profile where `CI` is set; ours must not inherit it."""
    probe = (
        "from hypothesis import settings\n"
        "from conformance.running import profiles\n"
        "for name in profiles.PROFILES:\n"
        "    profiles.load(name)\n"
        "    print(name, settings().derandomize, settings().max_examples)\n"
    )
    lines = {}
    for ci in ("", "true"):
        env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci else {})
        done = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        lines[ci] = done.stdout.split("\n")
    assert lines["true"] == lines[""]
    assert "thorough False 1000" in lines["true"]  # thorough stays random
    assert "dev True 10" in lines["true"]  # dev is served by the bank, as ci is
