"""The Keras ports, one backend per process: what the suite cannot see.

Keras keeps the backend it was first imported with, and pytest-xdist runs
many test files in one process, so each backend runs `tests/support/keras_probe.py`
in a fresh interpreter (one per backend: Keras and TensorFlow take seconds
to import) and the tests here judge its observations. Expected values come
from the float64 numpy MLP (`tests.support.reference`) under the project's bounds.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from conformance.checking.tolerance import analyse_forward, vjp_bounds
from conformance.mutants import MUTANTS
from implementations.stacks.numpy import canonical_params
from tests.support import keras_probe, reference
from tests.support.helpers import ROOT

#: A fresh interpreter per backend: Keras and its backend load in each (the Keras ports'
#: properties run in the fast tier, tests/core/running/test_conformance.py).
BACKEND_PROCESS = pytest.mark.slow(
    reason="25 s alone for the three backends: Keras and each backend load in a new process"
)

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

D, F, SEED, X = keras_probe.D, keras_probe.F, keras_probe.SEED, keras_probe.X
ARRAY_MODULE = {"jax": "jaxlib", "torch": "torch", "tensorflow": "tensorflow"}


def probe(backend: str) -> dict:
    """Run the probe for `backend` in a fresh interpreter; skip if Keras or it is missing."""
    for module in ("keras", backend):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.keras_probe", backend],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Keras's, TensorFlow's and absl's log lines stay out of the output.
    assert done.stderr == "", done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_common(seen: dict, backend: str) -> None:
    assert seen["backend"] == backend
    # Converters: any float32 bits through the Keras variables and back; kernels (in, out).
    assert seen["round_trip"] == [True] * 4
    assert seen["kernel_shapes"] == [[D, F], [F, F]]
    # The backend's own float32 (F,) array, also from a keras.Variable x.
    assert seen["out_type"] == ARRAY_MODULE[backend]
    assert seen["out_dtype_shape"] == ["float32", [F]]
    assert seen["variable_same"]
    params = canonical_params(SEED, D, F)
    error = np.abs(np.asarray(seen["out"], np.float64) - reference.forward(params, X))
    assert np.all(error <= analyse_forward(params, X).e2)
    # A KerasTensor x gives the symbolic (F,) output; its functional model runs the same MLP.
    assert seen["symbolic_shape"] == [F]
    assert seen["functional_out"] == seen["out"]
    # The exercise's gradient with respect to x, through the backend's checkpoint.
    ones = np.ones(F, np.float32)
    exact = reference.vjp(params, X, ones)["x"]
    assert np.all(np.abs(np.asarray(seen["dx"]) - exact) <= vjp_bounds(params, X, ones)["x"])
    # Another Keras backend cannot load here: unavailable (not broken), naming both.
    other = keras_probe.OTHER[backend]
    assert seen["other_port"]["missing"] is True
    for name in (backend, other):
        assert repr(name) in seen["other_port"]["reason"]
        assert repr(name) in seen["other_load"]


def stateless_w2_gradient_expected() -> np.ndarray:
    # The gradient of sum(MLP(x)) for the weights handed to stateless_call.
    return reference.vjp(keras_probe._params(), X, np.ones(F, np.float32))["w2"]


# One path: (e) reads the evidence of the call whose values (c) and (f) check.
#: What each traced port names to override, refusing a subclass's own `vjp` (numpy in and out,
#: it cannot be traced), and the activation its own exercise record saves when its own
#: `nn_checkpoint_forward` runs the model made under `RematScope(mode=None)`.
TRACED = {
    "jax": ("apply (with to_native and to_canonical)", "mask"),
    "tensorflow": ("mode (RematScope's) or reused (the kept Keras model)", "a"),
}


def check_one_path(seen: dict, backend: str) -> None:
    assert seen["port_e"] == "passed"
    if backend == "torch":
        # torch's instrument runs the port's own vjp: overriding it is welcome, and a
        # subclass whose own calls never checkpoint has the port's values and fails (e).
        assert MUTANTS["keras_torch_own_model_no_checkpoint"].killed_by == "e_evidence"
        assert seen["own_vjp"] == seen["own_gradients"] == "made"
        assert set(seen["differences"]) == {
            "forward",
            "nn_checkpoint_forward",
            *(f"vjp {n}" for n in ("w1", "b1", "w2", "b2", "x")),
        }
        assert max(seen["differences"].values()) <= 1e-6, seen["differences"]
        assert "VJP with checkpoint on: saves 1 activation" in seen["mutant_e"]
        assert "a: output of ReluBackward0" in seen["mutant_e"]
        activation = "a"
    else:
        model_methods, activation = TRACED[backend]
        assert "overrides vjp" in seen["own_vjp"]
        assert f"override {model_methods} instead" in seen["own_vjp"]
        if backend == "tensorflow":  # `gradients` makes vjp's values: refused as vjp is
            assert "overrides gradients, which makes vjp's values" in seen["own_gradients"]
            assert f"override {model_methods} instead" in seen["own_gradients"]
    assert seen["plain_exercise"] == {"activations": [activation], "recomputed": 0}


@BACKEND_PROCESS
def test_keras_on_jax():
    seen = probe("jax")
    check_common(seen, "jax")
    check_one_path(seen["one_path"], "jax")
    # RematScope(mode="full") puts one remat equation in the gradient's jaxpr; None none.
    assert seen["remat_equations"] == {"full": 1, "None": 0}
    assert seen["jit_same"]
    assert seen["vmap_shape"] == [2, F]
    assert seen["new_seed_compiles"] == 0
    # JAX traces the region inside the stateless scope: the weights passed in count.
    np.testing.assert_allclose(seen["stateless"]["w2_grad"], stateless_w2_gradient_expected(), 1e-5)


@BACKEND_PROCESS
def test_keras_on_torch():
    seen = probe("torch")
    check_common(seen, "torch")
    check_one_path(seen["one_path"], "torch")
    # The MLP's call runs again in the backward pass (torch's checkpoint rerun) only when on.
    assert seen["calls"] == {"full": 2, "None": 1}
    assert seen["x_unchanged"]
    # Keras issue 21861 (fixed by PR 21865): keyword arguments reach call under RematScope.
    assert seen["kwarg_reaches_call"] == [3.0, 3.0]
    # Why the port runs stateful: under stateless_call, the rerun reads the
    # model's own weights, and the weights passed in get a wrong gradient.
    assert not np.allclose(seen["stateless"]["w2_grad"], stateless_w2_gradient_expected())


@BACKEND_PROCESS
def test_keras_on_tensorflow():
    seen = probe("tensorflow")
    check_common(seen, "tensorflow")
    check_one_path(seen["one_path"], "tensorflow")
    assert seen["calls"] == {"full": 2, "None": 1}
    assert seen["x_unchanged"]
    # Under stateless_call, recompute_grad reruns the region from the variables:
    # the weights passed in get no gradient at all.
    assert seen["stateless"]["w2_grad"] is None
    # Inside tf.function (and with jit_compile=True): the first trace makes the
    # model; a new seed in a later trace is refused with the way out; a model
    # made eagerly before serves any trace.
    # A graph runs the eager kernels: the same bits. XLA (jit_compile) may fuse and
    # contract multiply-adds as it likes (on this AMD EPYC it differs in the last bit
    # where eager does not): within the rigorous bound of two float32 results.
    assert seen["function_jit_False_same"]
    bound = analyse_forward(canonical_params(SEED + 10 + 1, D, F), X).e2
    assert np.all(np.asarray(seen["function_jit_True_error"]) <= bound)
    for jit in (False, True):
        assert "first trace" in seen[f"function_jit_{jit}_new_seed"]
        assert seen[f"function_jit_{jit}_warmed"] == [F]


def test_the_keras_room_imports_no_keras_until_asked():
    code = (
        "import sys\n"
        "from implementations.stacks.keras import backend\n"
        "assert 'keras' not in sys.modules\n"
        "try:\n"
        "    backend.load('numpy')\n"
        "except ValueError as error:\n"
        "    print(error)\n"
        "assert 'keras' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "unknown Keras backend 'numpy'" in done.stdout
