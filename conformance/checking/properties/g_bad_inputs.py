"""(g) A bad input raises the contract's exception type, naming the argument."""

from __future__ import annotations

import re

import numpy as np

from implementations.contract import (
    BAD_INIT_INPUTS,
    BAD_INPUTS,
    BadInput,
    Implementation,
    byte_budget,
)

from ..checks import fail
from .schema import on_port
from .spec import Property


def check_bad_input(port: Implementation, reference: None, case) -> None:
    """(g) A bad input raises the contract's exception type, naming the argument. A bad
    `init_params` call goes to ports that check its inputs (`checks_init_inputs`: process
    ports, whose protocol requires it); for the others it is not a case."""
    bad, form = case
    bad: BadInput
    if bad.call == "init_params":
        if not getattr(port, "checks_init_inputs", False):
            return None
        quantity = f"bad input '{bad.label}'"
        call = lambda: port.init_params(bad.seed, bad.dim, bad.features)  # noqa: E731
    else:
        x = bad.x(port.from_numpy if form == "native" else np.asarray)
        quantity = f"bad input '{bad.label}' ({form} x)"
        call = lambda: port.nn_checkpoint_forward(bad.seed, x, bad.features)  # noqa: E731
    try:
        with byte_budget(bad.max_bytes):
            call()
    except Exception as error:
        if not isinstance(error, bad.error):
            fail(
                port.name,
                quantity,
                f"raised {type(error).__name__}: {error}; expected {bad.error.__name__}",
            )
        # The argument as a word: "x" in "expected" names nothing.
        if not re.search(rf"\b{re.escape(bad.argument)}\b", str(error)):
            fail(port.name, quantity, f"the message does not name {bad.argument!r}: {error}")
    else:
        fail(
            port.name,
            quantity,
            f"was accepted; expected {bad.error.__name__} naming {bad.argument!r}",
        )
    return None


def _bad_input_cases() -> list[tuple[BadInput, str]]:
    calls = [(bad, form) for bad in BAD_INPUTS for form in ("numpy", "native")]
    return calls + [(bad, "init") for bad in BAD_INIT_INPUTS]


#: What (g) reads beyond the contract.
READS = (
    on_port("checks_init_inputs", bool,
            "the port checks init_params' inputs (a process port: its protocol requires it)"),
)  # fmt: skip


#: A stack's mutant that declares `killed_by="g"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "g", "bad_inputs", "bad inputs raise the contract's errors", check_bad_input,
    cases=_bad_input_cases, needs_canonical=False, cost=10, reads=READS, mutants=MUTANTS,
)  # fmt: skip
