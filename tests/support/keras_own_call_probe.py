"""One path on a Keras port: `observe(backend)`, run by `tests/support/keras_probe.py` in the
backend's own process, and judged by `tests/keras/test_keras.py`. It observes what (e) says of
the port and of a subclass whose own value methods never checkpoint, whether the values agree,
and what a subclass that overrides `vjp` meets. No expected value here."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import implementations
from conformance.checking.checks import ConformanceError
from conformance.checking.properties.e_evidence import check_evidence
from conformance.mutants import load
from implementations.contract import Params

D, F, SEED = 3, 4, 3
X = np.array([0.5, -1.0, 2.0], np.float32)
_SHAPES = [(D, F), (F,), (F, F), (F,)]
PARAMS = Params(*(np.random.default_rng(2).standard_normal(s).astype(np.float32) for s in _SHAPES))


class _Case:
    """An evidence case as property (e) draws them."""

    params, x = PARAMS, X


def evidence(port: Any) -> str:
    """ "passed", or the message (e) fails the port with."""
    try:
        check_evidence(port, None, (_Case(), SEED))
    except ConformanceError as error:
        return str(error)
    return "passed"


def numpy(array: Any) -> np.ndarray:
    array = array.detach() if hasattr(array, "detach") else array
    return np.asarray(array.numpy() if hasattr(array, "numpy") else array, np.float32)


def largest_difference(a: Any, b: Any) -> float:
    return float(np.max(np.abs(numpy(a) - numpy(b))))


def refusal(port: Any, method: str) -> str:
    """The TypeError met by a subclass overriding `method` (`vjp`, `gradients`) with the
    port's own, checkpoint off ("made" if none)."""
    own = getattr(type(port), method)

    def override(self, *args, **kwargs):
        return own(self, *args, **({"checkpoint": False} if method == "vjp" else {}), **kwargs)

    try:
        type(f"Own_{method}", (type(port),), {"name": f"own_{method}", method: override})
    except TypeError as error:
        return str(error)
    return "made"


def plain_exercise_record(port: Any, backend: str) -> dict[str, Any]:
    """The exercise record of a subclass whose own `nn_checkpoint_forward` runs the model made
    under `RematScope(mode=None)`."""
    module = sys.modules[type(port).__module__]
    if backend == "jax":
        from implementations.policies import NONE
        from implementations.stacks.jax import CompiledExercise

        def plain(self, seed, x, features):
            run = CompiledExercise(lambda arrays, x: self.apply(self.to_native(*arrays), x, NONE))
            return run(seed, x, features)
    else:

        def plain(self, seed, x, features):
            return module.exercise(seed, x, features, None)

    own = type("PlainExercise", (type(port),), {"name": "plain", "nn_checkpoint_forward": plain})
    record = own().exercise_record(SEED, X, F)
    return {
        "activations": sorted(t.role for t in record.saved_by_origin("activation")),
        "recomputed": record.recomputed_count,
    }


def observe(backend: str) -> dict[str, Any]:
    """The observations, as JSON-ready values."""
    port = implementations.load(f"keras_{backend}")
    seen: dict[str, Any] = {"port_e": evidence(port), "own_vjp": refusal(port, "vjp")}
    if backend != "jax":  # the stateful ports' `gradients` make vjp's values
        seen["own_gradients"] = refusal(port, "gradients")
    seen["plain_exercise"] = plain_exercise_record(port, backend)
    if backend == "torch":
        mutant = load("keras_torch_own_model_no_checkpoint").port
        ones = np.linspace(-1, 1, F).astype(np.float32)
        ours, theirs = mutant.vjp(PARAMS, X, ones), port.vjp(PARAMS, X, ones)
        seen["differences"] = {
            "forward": largest_difference(mutant.forward(PARAMS, X), port.forward(PARAMS, X)),
            **{
                f"vjp {name}": largest_difference(value, theirs.as_dict()[name])
                for name, value in ours.as_dict().items()
            },
            "nn_checkpoint_forward": largest_difference(
                mutant.nn_checkpoint_forward(SEED, X, F), port.nn_checkpoint_forward(SEED, X, F)
            ),
        }
        seen["mutant_e"] = evidence(mutant)
    return seen
