"""The cyclic collector while a port's framework loads (`implementations.collector`): off in
`implementations.load`, and in the suite's own processes (its workers, compare's lanes, a bench
stack's process) what the load brought frozen out of its later scans."""

from __future__ import annotations

import gc

import pytest

import implementations
from conformance.running import worker
from implementations import collector


@pytest.fixture
def collector_on():
    """The collector on for the test, and as it was after."""
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_turns_the_collector_off_and_back_on(collector_on):
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("a port that fails to import")
    assert gc.isenabled()


def test_paused_leaves_a_collector_the_caller_turned_off_off(collector_on):
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()


def test_only_freeze_moves_what_is_alive_out_of_the_scans(collector_on):
    kept = [[] for _ in range(1000)]  # lists: the collector tracks them
    before = gc.get_freeze_count()
    with collector.paused():
        pass
    assert gc.get_freeze_count() == before
    with collector.paused(freeze=True):
        pass
    assert gc.get_freeze_count() >= before + len(kept)


def test_load_imports_the_port_with_the_collector_off_and_freezes_nothing(
    collector_on, monkeypatch
):
    seen = []

    def import_and_build(name, target):
        seen.append((name, gc.isenabled()))
        return "built"

    monkeypatch.setattr(implementations, "_import_and_build", import_and_build)
    kept = [[] for _ in range(1000)]  # a caller's objects: a load never freezes them
    before = gc.get_freeze_count()
    assert implementations.load.__wrapped__("jax_checkpoint") == "built"
    assert seen == [("jax_checkpoint", False)]
    assert gc.isenabled()
    assert gc.get_freeze_count() <= before, len(kept)  # frozen objects freed since: fewer


def test_a_worker_freezes_what_loading_its_port_left_alive(collector_on):
    pytest.importorskip("autograd")
    kept = [[] for _ in range(1000)]
    before = gc.get_freeze_count()
    session = worker.Session("hips_autograd", worker.Settings(), lambda message: None)
    assert session.info.state == "available", session.info.reason
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(kept)


class _Parent:
    """A lane's connection to the comparison, in this process: no timing asked."""

    def __init__(self):
        self.sent = []

    def send(self, message):
        self.sent.append(message)

    def recv(self):
        if self.sent[-1][0] == "timed":
            raise EOFError  # the comparison closed the connection
        return "no timing"


def test_a_compare_lane_loads_its_ports_paused_and_freezes_what_they_left(
    collector_on, monkeypatch
):
    from conformance.comparison import lanes

    seen = []
    monkeypatch.setattr(lanes.environment, "prepare", lambda: None)
    monkeypatch.setattr(lanes.isolation, "connection", _Parent)
    monkeypatch.setattr(implementations, "status", lambda names: seen.append(gc.isenabled()) or [])
    kept = [[] for _ in range(1000)]
    before = gc.get_freeze_count()
    lanes.serve(["pytorch"], *[None] * 7)
    assert seen == [False]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(kept)


def test_a_bench_stack_s_own_process_imports_it_paused_and_freezes_what_it_left(
    collector_on, monkeypatch
):
    from types import SimpleNamespace

    from conformance.benchmark import isolated

    seen = []

    def import_module(name):
        seen.append((name, gc.isenabled()))
        return SimpleNamespace(FRAMEWORK="f", versions=dict, configurations=list)

    parent = SimpleNamespace(sent=[], recv=lambda: ("stop", ()))
    parent.send = parent.sent.append
    monkeypatch.setattr(isolated.isolation, "connection", lambda: parent)
    monkeypatch.setattr(isolated.driver, "bench_module", import_module)
    kept = [[] for _ in range(1000)]
    before = gc.get_freeze_count()
    isolated.serve("a_bench_stack")
    assert seen == [("a_bench_stack", False)]
    assert [kind for kind, _ in parent.sent] == ["hello"]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(kept)
