"""(h) x is left unchanged, the output is float32 `(F,)`, calls repeat exactly, and the
arrays handed to forward and vjp are never written."""

from __future__ import annotations

import numpy as np

from implementations.contract import PARAM_NAMES, Implementation, Params
from implementations.stacks.numpy import canonical_params

from .. import strategies
from ..checks import bitwise_equal, fail
from .shared import SHAPE_BOUND_SHARE, run_seeded_forward
from .spec import Property


def check_call_hygiene(port: Implementation, reference: None, case) -> None:
    """(h) x is left unchanged, the output is float32 `(F,)`, and calls repeat exactly; the
    arrays handed to forward and vjp are never written (`check_no_writes`)."""
    check_no_writes(port, case)
    forms = {
        "numpy": lambda: case.x.copy(),
        "native": lambda: port.from_numpy(case.x.copy()),
        "list": lambda: case.x.tolist(),
    }
    for form, make in forms.items():
        x = make()
        first = run_seeded_forward(port, case, x)
        second = run_seeded_forward(port, case, x)
        after = port.to_numpy(x) if form == "native" else np.asarray(x, np.float32)
        bitwise_equal(port.name, f"x after the call ({form} x)", after, case.x)
        bitwise_equal(port.name, f"a repeated call ({form} x)", second, first)
    return None


def check_no_writes(port: Implementation, case) -> None:
    """The params, x and cotangent handed to forward and vjp stay as handed: read-only, as
    the contract says, and unchanged. They are handed as read-only arrays that own their
    memory, so that a port *could* turn the write flag back on: one that does, or writes
    (through any view), is named with the array. (Elsewhere a port is handed arrays it
    cannot unseal at all: `conformance.running.sealed`.)"""
    dim, features = int(case.dim), int(case.features)  # a case may hold them as 7.0
    params = canonical_params(int(case.seed), dim, features)
    originals = {f"params.{name}": getattr(params, name) for name in PARAM_NAMES}
    originals["x"] = np.asarray(case.x, np.float32)
    originals["cotangent"] = np.ones(features, np.float32)
    handed = {}
    for name, array in originals.items():
        handed[name] = np.array(array, copy=True)
        handed[name].flags.writeable = False
    handed_params = object.__new__(Params)  # these very arrays, not Params' own copies
    for name in PARAM_NAMES:
        object.__setattr__(handed_params, name, handed[f"params.{name}"])
    try:
        port.forward(handed_params, handed["x"], checkpoint=True)
        port.vjp(handed_params, handed["x"], handed["cotangent"], checkpoint=True)
    except ValueError as error:
        if "read-only" not in str(error):
            raise
        fail(port.name, "an array it was handed", f"written, though read-only: {error}")
    for name, array in handed.items():
        if array.flags.writeable:
            fail(port.name, name, "its write flag was turned back on (it is handed read-only)")
        if not np.array_equal(array, originals[name], equal_nan=True):
            fail(port.name, name, "written by the call (it is handed read-only)")


#: A stack's mutant that declares `killed_by="h"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "h", "hygiene", "x unchanged, float32 (F,), repeatable", check_call_hygiene,
    strategy=strategies.seeded_forward_cases, needs_canonical=False, share=SHAPE_BOUND_SHARE,
    cost=20, mutants=MUTANTS,
)  # fmt: skip
