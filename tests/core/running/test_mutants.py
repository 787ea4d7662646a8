"""The suite rejects every mutant, with the property aimed at its bug (100% required).

The mutants are hunted as a run hunts them, by the pytest plugin's `test_mutant`: each in
the worker process of its family's framework, the one that checks that framework's ports in
this session (tests/core/running/test_conformance.py), after them. Keras allows one backend per
process, so each Keras port's mutants run in its backend's worker.
"""

from __future__ import annotations

import pytest

import implementations
from conformance import mutants
from conformance.pytest_plugin import (
    hunted_mutants,
    test_mutant,  # noqa: F401
)
from conformance.running import profiles

pytest.importorskip("jax")
pytest.importorskip("flax")


def test_every_mutant_is_named_by_the_one_property_that_must_reject_it():
    """A stack's manifest says which property must kill each of its mutants, a property module
    the suite's own; the hunt reads it from there."""
    from conformance.checking.properties import BY_ID, PROPERTIES
    from implementations import manifests

    assert len(mutants.MUTANTS) >= 10
    named = dict((name, p.key) for p in PROPERTIES for name in p.mutants)
    declared = {
        s.name: BY_ID[s.killed_by].key
        for m in manifests.manifests()
        for s in m.mutants
        if s.killed_by
    }
    assert not set(named) & set(declared)  # each said once
    assert sorted({**named, **declared}) == sorted(mutants.MUTANTS)  # none without, no stale
    for name, key in {**named, **declared}.items():
        assert mutants.MUTANTS[name].killed_by == key, name


def test_every_mutant_is_hunted_here_or_by_the_scale_profile_test():
    """The plugin hunts the mutants of the ports it checks (every port but the sharded ones,
    as the default run); the sharded ports' mutants are hunted by the scale profile, with
    their ports, in tests/core/running/test_scale_profile.py (one start-up of their ranks for
    both)."""
    from tests.core.running.test_scale_profile import SHARDED_MUTANTS

    default = profiles.default_ports(profiles.load(), implementations.registered())
    hunted = hunted_mutants(default)
    assert not set(hunted) & set(SHARDED_MUTANTS)
    assert sorted(hunted + SHARDED_MUTANTS) == sorted(mutants.MUTANTS)
