"""The suite rejects every mutant, with the property aimed at its bug (100% required).

The mutants are hunted as a run hunts them: each in a worker process of its
family's port (Keras allows one backend per process), by `run_suite`.
"""

from __future__ import annotations

import pytest

import implementations
from conformance import mutants
from conformance.running import profiles
from conformance.running.suite import RunConfig, run_suite

pytest.importorskip("jax")
pytest.importorskip("flax")


def test_every_mutant_names_the_property_that_must_reject_it():
    from conformance.checking.properties import BY_KEY

    assert len(mutants.MUTANTS) >= 10
    for name, spec in mutants.MUTANTS.items():
        assert spec.killed_by in BY_KEY, name


#: The sharded ports' mutants are hunted by the scale profile, with their ports, in
#: tests/core/test_scale_profile.py (one start-up of their ranks for both).
HUNTED_HERE = sorted(
    name for name, spec in mutants.MUTANTS.items() if spec.family not in implementations.SHARDED
)


@pytest.fixture(scope="module")
def mutation_run() -> dict:
    """Every mutant but the sharded ports' hunted once, in its family's worker processes, by
    the profile of this session (the default run's)."""
    report = run_suite(RunConfig(ports=(), profile=profiles.load(), mutants=True, jobs=2))
    return {result.name: result for result in report.mutants}


def test_every_mutant_is_hunted_here_or_by_the_scale_profile_test():
    from tests.core.test_scale_profile import SHARDED_MUTANTS

    assert sorted(HUNTED_HERE + SHARDED_MUTANTS) == sorted(mutants.MUTANTS)


@pytest.mark.parametrize("name", HUNTED_HERE)
def test_the_suite_rejects_the_mutant(mutation_run, name):
    result = mutation_run[name]
    if result.status == "unavailable":
        pytest.skip(result.message)  # its framework is not installed
    assert result.status == "killed", f"{name} {result.status}: {result.message}"
    assert result.killed_by == mutants.MUTANTS[name].killed_by, result.message
    # Killed by a failed check, not by crashing the suite.
    assert not result.message.startswith(f"[{name}] raised"), result.message
