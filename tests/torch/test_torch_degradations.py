"""torch's documented degradations through their probes: what the version sweep runs at every
torch version it installs (`python -m conformance versions`, docs/VERSIONS.md). The details
of each are pinned in test_torch_policies.py and test_torch_compile_policies.py."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from conformance.checking import policy_expectations
from implementations import manifests

TORCH = [d for d in policy_expectations.all_degradations() if d.family.startswith("torch")]


@pytest.mark.parametrize("documented", TORCH, ids=lambda d: f"{d.family}-{d.policy}")
def test_each_documented_degradation_s_probe_says_it_holds(documented):
    holds, seen = manifests.resolve(documented.probe)()
    assert holds, seen
    assert seen  # what it saw, for the sweep's report
