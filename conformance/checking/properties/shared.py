"""What several properties share: the checked reading of a port's results, the comparison
of gradients, and the exercise's seeded call."""

from __future__ import annotations

from typing import Any

import numpy as np

from implementations.contract import MEASURED_BY_BASE, BackwardRecord, Grads, Implementation, Params

from .. import provenance
from ..checks import check_shape, fail, within
from ..tolerance import vjp_comparison

#: (e) and (h) run a quarter of the examples: what a framework keeps for backward, and whether
#: a call copies x, flattens and repeats, turn on the shape (the menu has four), not on the
#: values; every mutant they must kill dies on its first example.
SHAPE_BOUND_SHARE = 0.25


def params_of(port: Implementation, value: Any) -> Params:
    if not isinstance(value, Params):
        fail(port.name, "init_params", f"returned a {type(value).__name__}, not contract.Params")
    return value


def grads_of(port: Implementation, value: Any) -> Grads:
    if not isinstance(value, Grads):
        fail(port.name, "vjp", f"returned a {type(value).__name__}, not contract.Grads")
    return value


def compare_grads(port: str, quantity: str, case, analysis, grads: dict, reference: dict) -> float:
    comparison = vjp_comparison(
        case.params, case.x, case.cotangent, grads, reference, analysis=analysis
    )
    return max(
        within(port, quantity.format(name), grads[name], reference[name], bound, shift)
        for name, (shift, bound) in comparison.items()
    )


def record_of(port: Implementation, what: str, value: Any) -> BackwardRecord:
    """`value`, checked to be a record and stamped with who measured it (`provenance`); a
    record read off the base's model, beside the call whose values are checked, fails."""
    if not isinstance(value, BackwardRecord):
        fail(port.name, what, f"returned a {type(value).__name__}, not contract.BackwardRecord")
    record = provenance.stamped(port, value)
    if record.measured_by == MEASURED_BY_BASE:
        fail(
            port.name,
            what,
            "its evidence is read off the base's model, not off the call whose values are "
            "checked (a value method set on the instance, which the record never runs)",
        )
    return record


def run_seeded_forward(port: Implementation, case, x: Any) -> np.ndarray:
    out = port.to_numpy(port.nn_checkpoint_forward(case.seed, x, case.features))
    check_shape(port.name, "nn_checkpoint_forward output", out, (int(case.features),))
    if out.dtype != np.float32:
        fail(port.name, "nn_checkpoint_forward output", f"dtype {out.dtype}, expected float32")
    return out


def values_under(
    port: Implementation, argument: Any, what: str, case, canonical: dict, reference: dict
) -> float:
    """The port's forward and VJP under `checkpoint=argument` against `canonical`'s "output"
    and "grads", within `reference`'s "bound" and "analysis": the worst ratio ((j) under a
    policy, (k) under a composition)."""
    out = port.forward(case.params, case.x, checkpoint=argument)
    worst = within(port.name, f"forward, {what}", out, canonical["output"], reference["bound"])
    grads = grads_of(port, port.vjp(case.params, case.x, case.cotangent, checkpoint=argument))
    return max(
        worst,
        compare_grads(
            port.name, f"VJP d/d{{}}, {what}", case, reference["analysis"], grads.as_dict(),
            canonical["grads"],
        ),
    )  # fmt: skip
