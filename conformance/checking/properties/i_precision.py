"""(i) Forward, VJP and exercise are as close to the exact result as float32 arithmetic
gets (`checking.precision`)."""

from __future__ import annotations

import numpy as np

from implementations.contract import Implementation, param_shapes
from implementations.stacks.numpy import canonical_params

from .. import precision, strategies
from ..checks import check_shape, fail
from .shared import grads_of, run_seeded_forward
from .spec import Property


def prepare_precision(canonical: None, case) -> precision.Reference:
    # The exact results need no canonical port: the exercise's parameters
    # come from the numpy canonical init (within INIT_ULPS of Flax's).
    exercise = canonical_params(case.seed, case.dim, case.features)
    return precision.reference(case.params, case.x, case.cotangent, exercise)


def check_precision(port: Implementation, reference: precision.Reference, case) -> float:
    """(i) Forward, VJP and exercise are as close to the exact result as float32 arithmetic
    gets: a median error within the precision tier's threshold (`checking.precision`)."""
    # Each step is judged before the next runs, so a failure names the first result off.
    out = np.asarray(port.forward(case.params, case.x, checkpoint=True))
    check_shape(port.name, "forward output", out, (case.features,))
    results = _precision_verdict(
        port.name, [precision.judge_output("output", out, reference.forward)]
    )
    grads = grads_of(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=True))
    shapes = {**param_shapes(case.dim, case.features), "x": (case.dim,)}
    for name, value in grads.as_dict().items():
        check_shape(port.name, f"VJP d/d{name}", value, shapes[name])
    results += _precision_verdict(
        port.name,
        precision.judge_grads(grads.as_dict(), reference, case.params, case.x, case.cotangent),
    )
    exercise = run_seeded_forward(port, case, port.from_numpy(case.x.copy()))
    results += _precision_verdict(
        port.name, [precision.judge_output("end_to_end", exercise, reference.end_to_end)]
    )
    return max(r.ratio for r in results)


def _precision_verdict(port: str, results: list[precision.Result]) -> list[precision.Result]:
    """Fail on the first result over its threshold; **returns** the results otherwise."""
    labels = {"output": "the output", "end_to_end": "nn_checkpoint_forward's output"}
    for result in results:
        if result.failed:
            label = labels.get(result.name, result.name)
            fail(port, f"precision of {label}", precision.describe_failure(result))
    return results


#: A stack's mutant that declares `killed_by="i"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "i", "precision", "as close to exact as float32 gets (median, large shapes)",
    check_precision, prepare_precision, strategy=strategies.precision_cases,
    needs_canonical=False, cost=90, mutants=MUTANTS,
)  # fmt: skip
