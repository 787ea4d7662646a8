"""One port's row, measured in the process that holds the port: accuracy against the
canonical's results, precision bits against the exact ones, residuals from its instrument, and
its policy cells (its warm times are `warm`'s)."""

from __future__ import annotations

import numpy as np

import implementations
from implementations.contract import Implementation, Params

from ..checking import precision, provenance
from ..checking.tolerance import INIT_ULPS, forward_bound, vjp_comparison
from . import composition_matrix, policy_matrix, state_matrix
from .model import Bits, Expected, PortComparison, diff, residuals


def make_inputs(seed: int, dim: int, features: int) -> tuple[np.ndarray, np.ndarray]:
    """x `(D,)` and a cotangent `(F,)`, standard normal float32, from `seed`."""
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal(dim).astype(np.float32),
        rng.standard_normal(features).astype(np.float32),
    )


def expected_results(
    canonical: Implementation, params: Params, x: np.ndarray, cotangent: np.ndarray, seed: int
) -> Expected:
    """The canonical port's forward, exercise and VJP (`params`: its init for `seed`)."""
    exercise = canonical.nn_checkpoint_forward(seed, canonical.from_numpy(x), params.features)
    return Expected(
        forward=canonical.forward(params, x, checkpoint=True),
        exercise=canonical.to_numpy(exercise),
        grads=canonical.vjp(params, x, cotangent, checkpoint=True).as_dict(),
        policies=policy_matrix.references(canonical, params, x, cotangent),
    )


def compare_port(
    port: Implementation,
    canonical: Implementation | Expected,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    exact: precision.Reference | None = None,
) -> PortComparison:
    """Accuracy and residuals of one port (timings are added by the caller).

    `canonical`: the canonical port, or its results (`expected_results`).
    `exact`: `exact_results(params, x, cotangent)`, made once for every port
    (about 0.1 s at D = F = 1024); made here if not given.
    """
    row = PortComparison(port.name, "available", framework=port.framework, versions=port.versions())
    row.measured_by = provenance.measured_by(port)
    try:
        if not isinstance(canonical, Expected):
            canonical = expected_results(canonical, params, x, cotangent, seed)
        row.matmul_precision = dict(port.matmul_precision())
        out = port.forward(params, x, checkpoint=True)
        row.output = diff(out, canonical.forward, forward_bound(params, x))
        # `params` is the canonical init for this seed: the exercise's own parameters.
        features = params.features
        exercise = port.to_numpy(port.nn_checkpoint_forward(seed, port.from_numpy(x), features))
        row.exercise = diff(
            exercise, canonical.exercise, forward_bound(params, x, param_ulps=INIT_ULPS)
        )
        grads = port.vjp(params, x, cotangent, checkpoint=True).as_dict()
        reference = canonical.grads
        for name, (shift, bound) in vjp_comparison(params, x, cotangent, grads, reference).items():
            row.gradients[name] = diff(grads[name], reference[name], bound, shift)
        if exact is None:
            exact = exact_results(params, x, cotangent)
        row.precision = precision_bits(exact, params, x, cotangent, out, exercise, grads)
        for label, on in (("off", False), ("on", True)):
            record = port.backward_record(params, x, checkpoint=on)
            row.residuals[label] = residuals(provenance.stamped(port, record))
        if getattr(port, "policy_cells", True):  # an extra row (`rows`) has none
            row.policies = policy_matrix.measure(port, canonical.policies, params, x, cotangent)
            checked = {"output": canonical.forward, "grads": canonical.grads}
            row.compositions = composition_matrix.measure(port, checked, params, x, cotangent)
            row.states = state_matrix.measure(port, seed, params.dim, params.features)
    except Exception as error:  # a broken port gets a row that says so, not a crash
        row.error = f"{type(error).__name__}: {error}"
    return row


def exact_results(params: Params, x: np.ndarray, cotangent: np.ndarray) -> precision.Reference:
    """The exact results every port's bits are read against; `params` are the exercise's too
    (the canonical init for the seed)."""
    return precision.reference(params, x, cotangent, exercise_params=params)


def precision_bits(
    exact: precision.Reference,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    output: np.ndarray,
    exercise: np.ndarray,
    grads: dict[str, np.ndarray],
) -> dict[str, Bits]:
    """Each result's effective bits against the exact one (`exact_results`)."""
    results = {
        "output": precision.judge_output("output", output, exact.forward),
        "exercise": precision.judge_output("end_to_end", exercise, exact.end_to_end),
    }
    for result in precision.judge_grads(grads, exact, params, x, cotangent):
        results[result.name.removeprefix("d/d")] = result
    return {name: Bits(r.bits, r.ratio) for name, r in results.items()}


def measure_status(
    status: implementations.PortStatus,
    expected: Expected,
    params: Params,
    x: np.ndarray,
    cotangent: np.ndarray,
    seed: int,
    exact: precision.Reference,
) -> tuple[PortComparison, Implementation | None]:
    """The row of a port as `implementations.status` found it, and the port if it loaded."""
    if status.state != "available":
        return PortComparison(status.name, status.state, reason=status.reason), None
    port = implementations.load(status.name)
    port.pin_matmul_precision()
    row = compare_port(port, expected, params, x, cotangent, seed, exact)
    row.reference = port.name == implementations.CANONICAL
    return row, port
