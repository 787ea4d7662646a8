"""`compare`: the difference helper, the JSON for every available port, skips and errors."""

import copy
import importlib.util
import json

import numpy as np
import pytest

import implementations
from conformance import cli, compare
from conformance.compare import measure, render
from implementations import PortStatus
from implementations.contract import BackwardRecord, SavedTensor


def test_diff_reports_the_largest_difference_and_the_bound_there():
    actual = np.array([1.0, 2.0, 3.0], np.float32)
    expected = np.array([1.0, 2.5, 3.1], np.float32)
    bound = np.array([1.0, 1.0, 0.05])
    d = measure.diff(actual, expected, bound)
    assert d.max_abs == pytest.approx(0.5)
    assert d.bound == 1.0  # the bound at the element of the largest difference
    assert d.worst_ratio == pytest.approx(2.0, rel=1e-5)  # element 2: 0.1 / 0.05


def test_diff_takes_out_a_shift_and_calls_non_finite_infinitely_bad():
    actual, expected = np.array([1.0, 2.0]), np.array([0.0, 2.0])
    assert measure.diff(actual, expected, np.ones(2), shift=np.array([1.0, 0.0])).max_abs == 0
    nan = measure.diff(np.array([np.nan, 0.0]), np.zeros(2), np.ones(2))
    assert nan.max_abs == nan.worst_ratio == float("inf")
    wrong_shape = measure.diff(np.zeros(3), np.zeros(2), np.ones(2))
    assert wrong_shape.worst_ratio == float("inf")


def test_residual_list_groups_parameters():
    record = BackwardRecord(
        instrument="hand",
        saved=(
            SavedTensor((4,), "float32", "input"),
            SavedTensor((4,), "bool", "activation"),
            SavedTensor((4, 4), "torch.float32", "parameter"),
            SavedTensor((4,), "float32", "constant"),
        ),
    )
    residuals = measure.residuals(record)
    assert (residuals.count, residuals.bytes) == (2, 16 + 4)  # x and the mask
    text = render.residual_list(residuals.saved)
    assert text.splitlines()[:2] == ["(4,) f32 input", "(4,) bool activation"]
    assert "+ 1 params, 64 B" in text
    assert "+ 1 constants, 16 B" in text


def _compare_json(capsys, *extra: str) -> dict:
    argv = ["compare", "--json", "--dim", "4", "--features", "3", "--repeats", "1"]
    # The CLI's own parser, but not cli.main: its environment.prepare() would
    # set variables for the rest of the test session.
    code = cli.COMMANDS["compare"].run(cli.parser().parse_args([*argv, "--no-first-call", *extra]))
    data = json.loads(capsys.readouterr().out)
    bad = [p for p in data["ports"] if p["state"] == "broken" or p.get("error")]
    assert code == (1 if bad else 0), bad
    return data


def test_compare_json_has_a_row_per_port(capsys):
    pytest.importorskip("flax")
    data = _compare_json(capsys)
    assert (data["seed"], data["dim"], data["features"]) == (0, 4, 3)
    rows = {row["name"]: row for row in data["ports"]}
    assert list(rows) == [s.name for s in implementations.status()]
    assert rows[implementations.CANONICAL]["reference"]
    for name, row in rows.items():
        if row["state"] != "available":
            assert row["reason"], name
            continue
        assert not row["error"], (name, row["error"])
        assert row["versions"]
        assert all(row["versions"].values())
        assert row["output"]["worst_ratio"] <= 1.0, name
        assert set(row["gradients"]) == {"w1", "b1", "w2", "b2", "x"}
        assert all(g["worst_ratio"] <= 1.0 for g in row["gradients"].values()), name
        off, on = row["residuals"]["off"], row["residuals"]["on"]
        # Checkpointed, every port keeps only x: (4,) float32, 16 bytes.
        assert (on["count"], on["bytes"]) == (1, 16), (name, on)
        assert off["bytes"] > on["bytes"], name
        assert all({"shape", "dtype", "origin"} <= set(t) for t in off["saved"])
        assert row["warm_forward_seconds"] > 0
        assert row["warm_vjp_seconds"] > 0
        assert row["first_call"] == {}  # --no-first-call


def test_compare_reports_an_unavailable_port_without_crashing(monkeypatch):
    pytest.importorskip("flax")
    real_status, real_registered = implementations.status, implementations.registered()
    fake = PortStatus("ghost", "nowhere:Ghost", "test", "unavailable", "needs 'ghost'")
    monkeypatch.setattr(
        implementations, "registered", lambda: {**real_registered, "ghost": ("", "test")}
    )
    monkeypatch.setattr(
        implementations,
        "status",
        lambda names=None: [*real_status([n for n in names if n != "ghost"]), fake],
    )
    result = compare.run(
        0, 4, 3, [implementations.CANONICAL, "ghost"], repeats=1, first_calls=False
    )
    ghost = result.ports[-1]
    assert (ghost.name, ghost.state, ghost.reason) == ("ghost", "unavailable", "needs 'ghost'")
    assert [p.name for p in result.ports] == [implementations.CANONICAL, "ghost"]
    assert not compare.failed(result)  # unavailable is a skip, not a failure


def test_first_call_runs_in_a_fresh_process(tmp_path):
    pytest.importorskip("flax")
    canonical = implementations.load(implementations.CANONICAL)
    params = canonical.init_params(0, 4, 3)
    x, cotangent = measure.make_inputs(0, 4, 3)
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, **params.as_dict(), x=x, cotangent=cotangent)
    found = measure.first_call(implementations.CANONICAL, inputs, 0)
    assert set(found) == {"import", "forward", "vjp"}, found
    assert all(seconds > 0 for seconds in found.values())
    missing = measure.first_call("no_such_port", inputs, 0)
    assert "error" in missing
    assert "no such port" in missing["error"]


def test_a_port_that_raises_gets_an_error_row_and_fails_the_run():
    pytest.importorskip("flax")
    canonical = implementations.load(implementations.CANONICAL)
    port = copy.copy(canonical)  # the same port, but its forward pass breaks

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    port.forward = broken
    params = canonical.init_params(0, 4, 3)
    x, cotangent = measure.make_inputs(0, 4, 3)
    row = measure.compare_port(port, canonical, params, x, cotangent, 0)
    assert row.error == "RuntimeError: boom"
    assert compare.failed(compare.Comparison(0, 4, 3, implementations.CANONICAL, [row]))


def test_keras_on_two_backends_is_compared_in_two_processes():
    for module in ("flax", "keras", "torch"):  # found, not imported: that would fix a backend
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    names = ["keras_jax", "keras_torch"]
    result = compare.run(0, 4, 3, names, repeats=1, first_calls=False)
    rows = {row.name: row for row in result.ports}
    for name in names:
        assert rows[name].state == "available", rows[name].reason
        assert not rows[name].error, rows[name].error
        assert rows[name].warm_forward_seconds is not None
    # Two Keras backends never share a process: at least one was measured in its own.
    assert any(rows[name].timed_alone for name in names)
