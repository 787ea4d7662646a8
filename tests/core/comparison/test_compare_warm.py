"""`compare`'s warm VJP times the framework's call, not the port's per-call setup
(`conformance.comparison.warm`); a port that offers no prepared call is timed whole and says so.

Setup is held out by counting, not by timing (no test may depend on the host's speed): a
port's setup counts its runs, and the timed calls must run none of it; on real ports, the
contract's `vjp` (setup and all) must not run while timing. The one time read is a lower bound
that cannot flake: a port timed whole is charged at least the sleep its setup makes.
"""

import time

import numpy as np
import pytest

from conformance.comparison import warm
from conformance.comparison.model import Comparison, PortComparison
from conformance.comparison.port_row import make_inputs
from conformance.page import csv_files
from conformance.tables.kinds import compare as render
from implementations.contract import BackwardRecord, Grads, Implementation, Params
from tests.support.helpers import port_or_skip

#: What the fake port's setup sleeps: a time that charged it would read at least this.
SETUP_SECONDS = 0.2
DIM = FEATURES = 8


class SlowSetup(Implementation):
    """A numpy port whose per-call setup sleeps and counts its runs, and whose framework call
    counts its own; a setup run while a call runs would count in `setups_while_calling`."""

    name, framework = "slow_setup", "numpy"

    def __init__(self):
        self.setups = self.calls = self.setups_while_calling = 0
        self._calling = False

    def setup(self, params: Params, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.setups += 1
        self.setups_while_calling += self._calling
        time.sleep(SETUP_SECONDS)
        return np.array(params.w1), np.array(x)

    def call(self, w1: np.ndarray, x: np.ndarray, cotangent: np.ndarray) -> Grads:
        self._calling = True
        try:
            self.calls += 1
            zeros = np.zeros(FEATURES, np.float32)
            return Grads(np.outer(x, cotangent), zeros, np.zeros_like(w1), zeros, x)
        finally:
            self._calling = False

    def prepared_vjp(self, params, x, cotangent, *, checkpoint=True):
        w1, x = self.setup(params, x)
        return lambda: self.call(w1, x, cotangent)

    def vjp(self, params, x, cotangent, *, checkpoint=True):
        return self.call(*self.setup(params, x), cotangent)

    def init_params(self, seed, dim, features):
        zeros = np.zeros(features, np.float32)
        return Params(np.zeros((dim, features), np.float32), zeros, np.diag(zeros), zeros)

    def forward(self, params, x, *, checkpoint=True):
        return np.zeros(FEATURES, np.float32)

    def nn_checkpoint_forward(self, seed, x, features):
        return np.zeros(features, np.float32)

    def backward_record(self, params, x, *, checkpoint=True):
        return BackwardRecord(instrument="none")

    def exercise_record(self, seed, x, features):
        return BackwardRecord(instrument="none")

    def to_numpy(self, array):
        return np.asarray(array)

    def from_numpy(self, array):
        return array


class NoPreparedCall(SlowSetup):
    """The same port, offering no prepared call: `compare` times its `vjp` whole."""

    prepared_vjp = Implementation.prepared_vjp


class OwnVjp(SlowSetup):
    """A subclass that changes its `vjp` alone: its base's prepared call is not its call."""

    def vjp(self, params, x, cotangent, *, checkpoint=True):
        return super().vjp(params, x, 2 * cotangent, checkpoint=checkpoint)


def _inputs():
    x, cotangent = make_inputs(0, DIM, FEATURES)
    return SlowSetup().init_params(0, DIM, FEATURES), x, cotangent


def test_a_port_s_setup_runs_once_outside_the_timed_calls_and_is_not_charged():
    port, (params, x, cotangent) = SlowSetup(), _inputs()
    ((_forward, _vjp, method),) = warm.warm_timings([port], params, x, cotangent, 0, repeats=5)
    assert method == "prepared_vjp"
    assert (port.setups, port.setups_while_calling) == (1, 0)
    assert port.calls >= 5  # a warm-up, a sizing call, and every sample's calls


def test_a_port_without_a_prepared_call_is_timed_whole_and_the_table_says_so():
    port, (params, x, cotangent) = NoPreparedCall(), _inputs()
    ((forward, vjp, method),) = warm.warm_timings([port], params, x, cotangent, 0, repeats=2)
    assert method == "vjp"
    assert port.setups == port.calls  # every timed call ran its setup
    assert vjp.median >= SETUP_SECONDS  # and was charged for it
    row = PortComparison(port.name, "available")
    warm.set_warm(row, forward, vjp, method)
    assert row.warm_vjp_method == "vjp"
    assert row.warm_vjp_method in warm.VJP_METHODS
    table = render.summary_table(Comparison(0, DIM, FEATURES, port.name, [row]))
    (column,) = [i for i, c in enumerate(table.columns) if c.name.startswith("warm ms")]
    assert table.rows[0].cells[column].text.splitlines()[1].endswith(" +setup")
    (found,) = csv_files.compare_rows(Comparison(0, DIM, FEATURES, port.name, [row]).to_json())
    assert dict(zip(csv_files.compare_header(), found, strict=True))["warm_vjp_method"] == "vjp"
    row.warm_vjp_method = "prepared_vjp"
    table = render.summary_table(Comparison(0, DIM, FEATURES, port.name, [row]))
    assert "+setup" not in table.rows[0].cells[column].text


def test_a_subclass_that_changes_its_vjp_alone_is_timed_by_its_own_vjp():
    assert warm.prepared_is_the_ports(SlowSetup())
    assert not warm.prepared_is_the_ports(OwnVjp())
    _call, method = warm.timed_vjp(OwnVjp(), *_inputs())
    assert method == "vjp"


@pytest.mark.parametrize("name", ["pytorch", "flax_linen", "hips_autograd"])
def test_compare_times_the_framework_s_own_call(name, monkeypatch):
    port = port_or_skip(name)
    port.pin_matmul_precision()
    params = port.init_params(0, 64, 64)
    x, cotangent = make_inputs(0, 64, 64)
    whole = []  # the contract's vjp, setup and all, must not run while timing
    vjp = port.vjp
    monkeypatch.setattr(port, "vjp", lambda *a, **k: whole.append(1) or vjp(*a, **k))
    ((_, timed, method),) = warm.warm_timings([port], params, x, cotangent, 0, repeats=5)
    assert method == "prepared_vjp"
    assert whole == []
    assert timed.median > 0
