"""tfjs's block with variables and RNGs through the protocol's `state_step`: `tf.customGrad`
whose gradFunc recomputes the block draws the forward's mask again (dropout seeded with
`String(seed)`) and updates the statistics once, as declared; held to the numpy block."""

from __future__ import annotations

import pytest

import implementations
from implementations.stacks.tfjs.expectations import STATEFUL
from tests.support.stateful_steps import StatefulPortChecks

#: It starts the tfjs port (`-m 'not subprocess'` leaves it out).
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="needs Node.js: the tfjs port's state_step through the protocol"),
]


@pytest.fixture(scope="module")
def tfjs(node):
    try:
        port = implementations.load("tfjs")
    except implementations.PortUnavailable as error:
        pytest.fail(f"node is installed, yet tfjs is unavailable: {error}")
    yield port
    port.close()


class _Started:
    """The running port as `StatefulPortChecks` reads a port class: called, it is the port;
    its `state_variants` are the ones its hello advertised."""

    def __init__(self, port):
        self._port = port
        self.state_variants = port.state_variants

    def __call__(self):
        return self._port


class TestTfjsStateful(StatefulPortChecks):
    table = STATEFUL["tfjs"]
    right = ("default",)
    counts = {"default": (1, 1, True)}  # noqa: RUF012 - read only

    @pytest.fixture(autouse=True)
    def _port(self, tfjs):
        self.port = _Started(tfjs)


def test_hello_advertises_the_declared_variants(tfjs):
    assert tfjs.state_variants.keys() == STATEFUL["tfjs"].keys()
    assert "tf.customGrad" in tfjs.state_variants["default"]
