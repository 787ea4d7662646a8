"""Small helpers the tests share: loading a port or skipping, walking jaxprs, comparing bits."""

from __future__ import annotations

import numpy as np
import pytest

import implementations
from implementations import PortUnavailable

REMAT_NAMES = ("remat2", "remat", "checkpoint")


def port_or_skip(name: str) -> implementations.Implementation:
    """The registered port `name`, skipping the test when its framework is not installed."""
    try:
        return implementations.load(name)
    except PortUnavailable as error:
        if error.missing:
            pytest.skip(error.reason)
        raise


def remat_equations(jaxpr) -> list[str]:
    """Names of remat/checkpoint equations anywhere in a jaxpr, walked by hand.

    Sub-jaxprs are followed (jit, custom rules, loops): a checkpoint can sit inside any.
    """
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in REMAT_NAMES:
            found.append(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    found += remat_equations(inner)
    return found


def same_bits(a, b) -> bool:
    """The same shape, dtype and bytes (so -0.0 differs from 0.0)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
