"""Golden vectors: intact, fresh, and able to reject a wrong port.

That every port passes them, through `vectors check` with every other framework unimportable
(JAX too, for a port that is not JAX's), is checked in each stack's interpreter by
tests/core/implementations/test_stacks_alone.py.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import implementations
from conformance.checking import vectors
from conformance.mutants import load


def _available(name):
    try:
        return implementations.load(name)
    except implementations.PortUnavailable as error:
        pytest.skip(error.reason)


def test_committed_vectors_are_intact_and_cover_the_seed_range():
    manifest, arrays = vectors.load(vectors.committed_manifest())
    seeds = [int(v["seed"]) for v in manifest["vectors"] if v["kind"] == "seeded"]
    assert min(seeds) == 0
    assert max(seeds) == 2**63 - 1
    assert any(2**32 <= s < 2**33 for s in seeds)
    assert any(v["seed_form"] == "float" for v in manifest["vectors"])
    assert any(v["kind"] == "general" for v in manifest["vectors"])
    assert len(arrays) == len(manifest["vectors"]) * len(manifest["arrays"])


def test_committed_vectors_match_a_fresh_export(tmp_path):
    canonical = _available(implementations.CANONICAL)
    _, fresh = vectors.load(vectors.export(canonical, tmp_path / "fresh"))
    _, committed = vectors.load(vectors.committed_manifest())
    assert set(fresh) == set(committed)
    for key, value in committed.items():
        name = key.split("/", 1)[1]
        if name in ("output", "x", "cotangent") or name.startswith("param_"):
            np.testing.assert_array_equal(fresh[key], value, err_msg=key)


@pytest.mark.parametrize("mutant", ["seed_plus_one", "bias_off_by_1e-3", "transposed_kernel"])
def test_the_vectors_reject_a_wrong_port(mutant):
    pytest.importorskip("flax")
    port = load(mutant).port
    assert any(not r.passed for r in vectors.check(port))


def test_a_tampered_npz_is_refused(tmp_path):
    manifest_path = vectors.committed_manifest()
    shutil.copy(manifest_path, tmp_path / manifest_path.name)
    npz = manifest_path.with_suffix(".npz")
    data = bytearray(npz.read_bytes())
    data[-100] ^= 0xFF
    (tmp_path / npz.name).write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256"):
        vectors.load(tmp_path / manifest_path.name)
