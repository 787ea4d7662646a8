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


def without_frameworks(directory, names) -> dict[str, str]:
    """An environment in which the named top-level modules cannot be imported.

    Each gets a shadow package in `directory` that raises `ModuleNotFoundError`
    naming it, as if it were not installed. The directory goes first on
    `PYTHONPATH`, so every process started with this environment, worker
    processes included, sees the same.
    """
    import os
    from pathlib import Path

    for name in names:
        package = Path(directory) / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r} (blocked for a test)'!r}, "
            f"name={name!r})\n"
        )
    path = os.pathsep.join([str(directory), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}
