"""The tfjs process port: its pinned dependency, its init in JavaScript, its evidence from tfjs
itself (and the tfjs internals that evidence reads), its mutant, and how it is unavailable.

Expected init values come from the numpy canonical init (itself held bit for bit to Flax in
tests/core/test_canonical_init.py), never from the port. The cross-framework properties run in
the conformance suite (tests/core/test_conformance.py collects every registered port).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import implementations
from conformance.mutants import load as load_mutant
from implementations.stacks.numpy import canonical_params
from tests.helpers import ROOT

TFJS = ROOT / "implementations" / "process" / "tfjs"


@pytest.fixture(scope="module")
def tfjs(node):
    try:
        return implementations.load("tfjs")
    except implementations.PortUnavailable as error:
        pytest.fail(f"node is installed, yet tfjs is unavailable: {error}")


def test_the_lock_pins_tfjs_4_22_0():
    package = json.loads((TFJS / "package.json").read_text())
    lock = json.loads((TFJS / "package-lock.json").read_text())
    assert package["dependencies"] == {"@tensorflow/tfjs": "4.22.0"}
    assert lock["packages"]["node_modules/@tensorflow/tfjs"]["version"] == "4.22.0"


def test_hello_reports_the_pinned_versions(tfjs):
    assert tfjs.framework == "@tensorflow/tfjs"
    assert tfjs.versions()["@tensorflow/tfjs"] == "4.22.0"
    assert tfjs.checkpoint_api == "tf.customGrad"


@pytest.mark.parametrize(
    ("seed", "dim", "features"),
    [(0, 1, 1), (42, 16, 16), (2**32 + 5, 3, 4), (2**63 - 1, 300, 7), (12345, 64, 128)],
)
def test_the_javascript_init_equals_the_canonical_bit_for_bit(tfjs, seed, dim, features):
    mine, expected = tfjs.init_params(seed, dim, features), canonical_params(seed, dim, features)
    for name in ("w1", "b1", "w2", "b2"):
        got, want = getattr(mine, name), getattr(expected, name)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=name)


def _params_and_x():
    params = canonical_params(7, 5, 4)
    return params, np.array([0.5, -1.0, 2.0, 0.25, -3.0], np.float32)


def test_with_the_checkpoint_the_tape_keeps_only_the_inputs(tfjs):
    params, x = _params_and_x()
    record = tfjs.backward_record(params, x, checkpoint=True)
    origins = sorted(t.origin for t in record.saved)
    assert origins == ["input", "parameter", "parameter", "parameter", "parameter"]
    assert record.checkpoint_regions == 1  # tf.customGrad's node on tfjs's tape
    assert dict(record.recomputed) == {"Relu": 1, "Add": 1}
    assert "BatchMatMul 5" in record.instrument  # 4 gradient matmuls + the recomputed one


def test_without_the_checkpoint_the_tape_keeps_the_hidden_activations(tfjs):
    params, x = _params_and_x()
    record = tfjs.backward_record(params, x, checkpoint=False)
    notes = sorted(t.note for t in record.saved if t.origin == "activation")
    # relu's input and output, and the hidden layer for the second matmul and the adds
    assert notes == ["saved by Add", "saved by Add", "saved by BatchMatMul", "saved by Relu"]
    assert record.checkpoint_regions == 0
    assert dict(record.recomputed) == {}
    assert "BatchMatMul 4" in record.instrument


# Written from tfjs-core 4.22's gradient configs, not from the port: BatchMatMul saves both
# inputs (x; a), Add both (d1 = x @ W1; a @ W2, which the record names y), Relu its input h.
# Backward matmuls: dW2, da, dW1, dx (4); tf.customGrad's gradient reruns x @ W1 (5).
ROLES_BY_NOTE = {
    "none": [
        ("a", "saved by BatchMatMul"),
        ("d1", "saved by Add"),
        ("h", "saved by Relu"),
        ("x", "saved by BatchMatMul"),
        ("y", "saved by Add"),
    ],
    "full": [("x", "saved by forward")],  # forward: tf.customGrad's node
}


@pytest.mark.parametrize(("policy", "matmuls"), [("none", 4), ("full", 5)])
def test_the_tape_names_the_role_of_each_kept_tensor(tfjs, policy, matmuls):
    params, x = _params_and_x()
    record = tfjs.backward_record(params, x, checkpoint=policy == "full")
    assert sorted((t.role, t.note) for t in record.kept) == ROLES_BY_NOTE[policy]
    assert all(t.role == "" for t in record.saved_by_origin("parameter"))
    assert record.backward_matmuls == matmuls


def test_hello_declares_none_and_full_and_why_not_the_rest(tfjs):
    assert set(tfjs.policies) == {"none", "full"}
    assert set(tfjs.inexpressible) == {"save_dots", "save_named", "offload_dots", "budget"}
    assert all("tfjs has no remat policy API" in why for why in tfjs.inexpressible.values())
    assert tfjs.instrument_family == "@tensorflow/tfjs"


def test_the_mutant_without_custom_grad_saves_activations(tfjs):
    mutant = load_mutant("tfjs_no_custom_grad")
    assert mutant.port is not None, mutant.reason
    params, x = _params_and_x()
    record = mutant.port.backward_record(params, x, checkpoint=True)
    assert record.saved_by_origin("activation")
    assert record.checkpoint_regions == 0
    # and it computes the same function
    np.testing.assert_array_equal(mutant.port.forward(params, x), tfjs.forward(params, x))
    mutant.port.close()


def test_without_node_tfjs_is_unavailable_with_the_reason(tmp_path):
    code = "import implementations; s, = implementations.status(['tfjs']); print(s.state, s.reason)"
    env = {**os.environ, "PATH": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "unavailable needs 'node', not found on PATH", result.stderr


def test_without_npm_and_without_tfjs_hello_says_unavailable(node, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)  # node, and no npm
    env = {**os.environ, "PATH": str(bin_dir), "REMAT_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(
        [node, str(TFJS / "port.js")],
        input='{"id":1,"op":"hello","protocol":1}\n{"id":2,"op":"shutdown"}\n',
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    if (TFJS / "node_modules").exists():
        pytest.skip("a node_modules beside port.js provides tfjs here")
    first = json.loads(result.stdout.splitlines()[0])
    assert first["error"]["type"] == "Unavailable"
    assert "npm is not on PATH" in first["error"]["message"]
