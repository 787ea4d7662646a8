"""The suite as a pytest plugin: every property, parametrized by port name.

Enable it in a conftest.py with `pytest_plugins = ["conformance.pytest_plugin"]`
and collect the tests by importing them into a test module:

    from conformance.pytest_plugin import test_property  # noqa: F401

Test ids read `test_property[pytorch-c_vjp]`, so `-k torch` or `-k vjp`
select ports and properties. `--port NAME` (repeatable) limits the ports;
`--expectations DIR` reads expected failures from `DIR/<port>.txt`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import implementations
from implementations import PortUnavailable

from . import environment, expectations
from .properties import PROPERTIES
from .runner import run_property
from .suite import REFERENCE_ONLY, load_canonical


class StaleExpectationWarning(UserWarning):
    """An expected failure that no longer fails, or names no property: remove the entry."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("remat-conformance")
    group.addoption(
        "--port",
        action="append",
        default=None,
        metavar="NAME",
        help="check only this port (repeatable)",
    )
    group.addoption("--expectations", default=None, metavar="DIR",
                    help="read expected failures from DIR/<port>.txt")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    environment.prepare()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "port_name" in metafunc.fixturenames:
        names = metafunc.config.getoption("port") or list(implementations.registered())
        metafunc.parametrize("port_name", names)
    if "conformance_property" in metafunc.fixturenames:
        metafunc.parametrize("conformance_property", PROPERTIES, ids=[p.key for p in PROPERTIES])


@pytest.fixture
def port(port_name: str) -> implementations.Implementation:
    """The port under test: skipped if its framework is missing, failed if it is broken."""
    try:
        loaded = implementations.load(port_name)
    except PortUnavailable as error:
        if error.missing:
            pytest.skip(error.reason)
        pytest.fail(f"port {port_name!r} is broken: {error.reason}", pytrace=False)
    loaded.pin_matmul_precision()
    return loaded


@pytest.fixture(scope="session")
def canonical_port() -> implementations.Implementation | None:
    """The canonical port, or None when its framework is missing."""
    return load_canonical()


@pytest.fixture(scope="session")
def port_expectations(request: pytest.FixtureRequest):
    """Expected failures by port, read once per session; warns about stale entries."""
    directory = request.config.getoption("expectations")
    cache: dict[str, expectations.Expectations] = {}

    def get(name: str) -> expectations.Expectations:
        if name not in cache:
            cache[name] = expectations.load(name, Path(directory) if directory else None)
            for warning in cache[name].warnings:
                warnings.warn(warning, StaleExpectationWarning, stacklevel=1)
        return cache[name]

    return get


def test_property(port, canonical_port, conformance_property, port_expectations) -> None:
    """One property of the suite on one port."""
    prop = conformance_property
    if port.name == implementations.CANONICAL and prop.id in REFERENCE_ONLY:
        pytest.skip("the canonical port is the reference for this property")
    outcome = run_property(prop, port, canonical_port)
    reason = port_expectations(port.name).expected.get(prop.key)
    if outcome.status == "skip":
        pytest.skip(outcome.message)
    if reason is not None:
        if outcome.status == "fail":
            pytest.xfail(f"expected failure: {reason}")
        warnings.warn(
            f"{port.name}: '{prop.key}' is listed as failing but passed; remove it",
            StaleExpectationWarning,
            stacklevel=1,
        )
    if outcome.status == "fail":
        pytest.fail(outcome.message, pytrace=False)
