"""How busy other work kept the machine while `compare` timed its ports."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from conformance.comparison import load
from conformance.comparison.measure import Comparison

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


def test_others_are_the_machines_cpu_time_minus_the_comparisons_own(monkeypatch):
    readings = iter([(0.0, 100.0, 10.0), (2.0, 104.0, 11.0)])  # wall, machine busy, this process

    def now(self):
        wall, machine, own = next(readings)
        return wall, machine, own, sum(self._children())

    children = iter([[5.0, 1.0], [6.5, 1.0]])  # two lanes: one timed 1.5 s meanwhile
    monkeypatch.setattr(load.OthersWhileTiming, "_now", now)
    others = load.OthersWhileTiming(lambda: next(children))
    others.start()
    # 4 s of the machine's CPU in 2 s of wall time, 1 + 1.5 of them the comparison's own.
    assert others.stop() == pytest.approx((4.0 - 2.5) / 2.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_a_process_outside_the_comparison_counts_as_other_work():
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # it is running
        others = load.OthersWhileTiming(lambda: [])
        others.start()
        time.sleep(1.0)
        busy = others.stop()
    finally:
        burner.kill()
        burner.wait()
    assert busy is not None
    assert busy >= 0.6  # one core spinning (more if the machine is busy with anything else)


def _comparison(**load_figures) -> Comparison:
    return Comparison(0, 4, 3, "flax_linen", [], load=load_figures, cores=2)


def test_the_times_are_marked_noisy_only_for_other_work():
    # The comparison's own lanes raise the load average after it: that alone marks nothing.
    assert not _comparison(before=0.3, after=2.6, others_while_timing=0.1).loaded
    assert _comparison(before=0.3, after=2.6, others_while_timing=1.2).loaded
    # A busy minute before the run that was over by the timings marks nothing either.
    assert not _comparison(before=2.5, after=2.6, others_while_timing=0.1).loaded
    # Where other work cannot be measured, the load averages decide.
    assert _comparison(before=0.3, after=2.6).loaded
    assert _comparison(before=2.5, after=1.5).loaded
    assert not _comparison(before=0.3, after=1.5).loaded
