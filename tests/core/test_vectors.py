"""Golden vectors: fresh, checkable per port, and usable where JAX is not installed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import implementations
from conformance.checking import vectors
from conformance.mutants import load
from tests.helpers import run_cli


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


@pytest.mark.parametrize("name", list(implementations.BUILTIN))
def test_every_port_passes_the_vectors(name):
    try:
        port = implementations.load(name)
    except implementations.PortUnavailable as error:
        if not error.held:
            pytest.skip(error.reason)
        # Its stack is held here (Keras on another backend): check it as users do.
        done = run_cli("vectors", "check", "--implementation", name, "--json")
        results = json.loads(done.stdout)
        assert done.returncode == 0, [r["message"] for r in results if not r["passed"]][:3]
        assert results
        return
    results = vectors.check(port)
    assert results
    failures = [r.message for r in results if not r.passed]
    assert not failures, failures[:3]


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


def test_the_torch_port_is_checked_from_vectors_with_jax_blocked():
    pytest.importorskip("torch")
    code = textwrap.dedent(
        """
        import sys
        for name in ("jax", "jaxlib", "flax", "equinox"):
            sys.modules[name] = None  # as if not installed
        from conformance.cli import main
        status = main(["vectors", "check", "--implementation", "pytorch", "--json"])
        assert not [m for m in ("jax", "jaxlib", "flax") if sys.modules.get(m)], "jax got imported"
        sys.exit(status)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    checks = json.loads(result.stdout)
    assert len(checks) >= 60
    assert all(c["passed"] for c in checks)
    assert {c["check"] for c in checks} == {"init", "end_to_end", "forward", "vjp"}
