"""`compare`'s warm VJP times the framework's call, not the port's per-call setup
(`conformance.comparison.warm`); a port that offers no prepared call is timed whole and says so.

Setup is held out by counting, not by timing: a port's setup counts its runs, and the timed
calls must run none of it. The one timing bound (real ports) is a factor of 10, far from the
noise of a shared machine (back-to-back medians of one call differed by up to 4x here, under a
load of 13 on 2 cores) and far below what timing setup would add where it is costly (a traced
or compiled function rebuilt per call costs 10 to 100 times the call).
"""

import statistics
import time

import numpy as np
import pytest

from conformance.comparison import warm
from conformance.comparison.model import Comparison, PortComparison
from conformance.comparison.port_row import make_inputs
from conformance.page import csv_files
from conformance.running.timing import time_interleaved
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
    ((_forward, vjp, method),) = warm.warm_timings([port], params, x, cotangent, 0, repeats=5)
    assert method == "prepared_vjp"
    assert (port.setups, port.setups_while_calling) == (1, 0)
    assert port.calls >= 5  # a warm-up, a sizing call, and every sample's calls
    # Charged, the setup's sleep would put the median at 0.2 s or more.
    assert vjp.median < SETUP_SECONDS / 2


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


def _torch_call(port, params, x, cotangent):
    import torch

    from implementations.stacks.torch.mlp import STATE_NAMES

    model = port.model(params, True)
    x = torch.tensor(x, requires_grad=True)
    leaves = [x, *(model.get_parameter(name) for name in STATE_NAMES)]
    cotangent = torch.tensor(cotangent)
    return lambda: torch.autograd.grad(model(x), leaves, cotangent)


def _jax_call(port, params, x, cotangent):
    import jax

    args = jax.device_put(((params.w1, params.b1, params.w2, params.b2), x, cotangent))
    return lambda: jax.block_until_ready(port.compiled.vjp(*args, checkpoint=True))


def _autograd_call(port, params, x, cotangent):
    from autograd import make_vjp

    run, arrays = port._block(True), (params.w1, params.b1, params.w2, params.b2, x)
    return lambda: make_vjp(run, (0, 1, 2, 3, 4))(*arrays)[0](cotangent)


@pytest.mark.parametrize(
    ("name", "framework_call"),
    [("pytorch", _torch_call), ("flax_linen", _jax_call), ("hips_autograd", _autograd_call)],
)
def test_compare_times_the_framework_s_own_call(name, framework_call, monkeypatch):
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
    alone = statistics.median(time_interleaved([framework_call(port, params, x, cotangent)], 5)[0])
    assert alone / 10 < timed.median < alone * 10
