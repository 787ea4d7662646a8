"""Keras under composition, as measured (keras 3.15.1), each backend in a fresh interpreter
(Keras keeps its first backend). `twice` is `keras.remat(mlp)`, `under_trainer` an outer layer
made under `RematScope(mode="full")` (`model.Nested`; on JAX, the JAX base's outer
`jax.checkpoint` over the model call); each port is held to its backend's instrument family,
so the rows are its backend's: in JAX's grad jaxpr the outer recompute is dead code
(`remat_partial_eval`'s DCE: x @ W1 reruns once, as once); on torch the nested
non-reentrant checkpoints stop early (x @ W1 reruns once, as once); on TensorFlow the outer
`tf.recompute_grad` reruns the inner region's forward for nothing (4 matmuls, where once
reruns 2). Every nested case enters two regions, and the values do not change."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="11 s alone: Keras and each backend load in a new process"),
]

_PROBE = """
import json, sys
import numpy as np
import implementations
from conformance.checking.properties import k_composition as records
from implementations.composition import CASES, Nesting
from tests.support import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
port = implementations.load(sys.argv[1])
plain = port.backward_record(PARAMS, X, checkpoint=False)
cotangent = np.linspace(-1, 1, 4).astype(np.float32)
once = port.vjp(PARAMS, X, cotangent, checkpoint=True).as_dict()
forward = port.forward(PARAMS, X, checkpoint=True)
rows, same = {}, {}
for case in CASES:
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    records.check_record(port, case, record, plain)  # (k)'s own check, against the table
    rows[case] = [sorted(record.saved_roles), record.forward_matmuls,
                  records.rerun_matmuls(record, plain), record.checkpoint_regions]
    grads = port.vjp(PARAMS, X, cotangent, checkpoint=Nesting(case)).as_dict()
    same[case] = bool(np.array_equal(port.forward(PARAMS, X, checkpoint=Nesting(case)), forward)
                      and all(np.array_equal(grads[k], once[k]) for k in once))
print(json.dumps({"rows": rows, "same": same, "plain": [plain.forward_matmuls,
                  plain.backward_matmuls]}))
"""

#: backend -> case -> (kept roles, forward matmuls, matmuls again in backward, regions)
MEASURED = {
    "jax": {
        "once": [["x"], 2, 1, 1],
        "twice": [["x"], 2, 1, 2],
        "under_trainer": [["x"], 2, 1, 2],
    },
    "torch": {
        "once": [["x"], 2, 1, 1],
        "twice": [["x"], 2, 1, 2],
        "under_trainer": [["x"], 2, 1, 2],
    },
    "tensorflow": {
        "once": [["x"], 2, 2, 1],
        "twice": [["x"], 2, 4, 2],
        "under_trainer": [["x"], 2, 4, 2],
    },
}


def _probe(backend: str) -> dict:
    for module in ("keras", backend):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, f"keras_{backend}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", sorted(MEASURED))
def test_each_case_as_measured_and_the_values_unchanged(backend):
    seen = _probe(backend)
    assert seen["rows"] == MEASURED[backend]
    assert seen["plain"] == [2, 4]  # the plain block: two matmuls, four in the gradient
    assert seen["same"] == {case: True for case in MEASURED[backend]}
