"""`compare`: the difference helper, the JSON for every available port, skips and errors."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import implementations
from conformance import cli
from conformance import comparison as compare
from conformance.comparison import composition_matrix, measure, policy_matrix
from conformance.comparison import rows as rows_module
from conformance.running import environment
from conformance.tables.kinds import compare as render
from implementations.contract import BackwardRecord, SavedTensor
from implementations.policies import POLICY_NAMES

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


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


def test_residuals_count_the_kept_tensors_and_name_their_roles_not_the_parameters():
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
    assert render.roles(residuals.saved) == "input, activation"  # compare's note


def _compare_json(capsys, *extra: str) -> dict:
    argv = ["compare", "--json", "--dim", "4", "--features", "3", "--repeats", "1"]
    # The CLI's own parser, but not cli.main: its environment.prepare() would
    # set variables for the rest of the test session.
    code = cli.COMMANDS["compare"].run(cli.parser().parse_args([*argv, "--no-first-call", *extra]))
    data = json.loads(capsys.readouterr().out)
    bad = [p for p in data["ports"] if p["state"] == "broken" or p.get("error")]
    assert code == (1 if bad else 0), bad
    return data


@pytest.mark.slow(reason="24 s alone: compares every installed port, a process per framework")
def test_compare_json_has_a_row_per_port(capsys):
    pytest.importorskip("flax")
    data = _compare_json(capsys)
    assert (data["seed"], data["dim"], data["features"]) == (0, 4, 3)
    rows = {row["name"]: row for row in data["ports"]}
    # The sharded ports are compared when named, never by default (their ranks cost start-ups).
    expected = [s.name for s in implementations.status() if s.name not in implementations.SHARDED]
    # Then the extra rows (a framework's graph mode), "unavailable" where it is not installed.
    assert list(rows) == [*expected, *rows_module.declared()]
    assert rows[implementations.CANONICAL]["reference"]
    # Two Keras backends never share a process: each measures in a lane of its own.
    keras = [row for name, row in rows.items() if name.startswith("keras_")]
    measured = [row["lane"] for row in keras if row["state"] == "available"]
    assert len(set(measured)) == len(measured), measured
    for name, row in rows.items():
        _check_row(name, row, extra=name in rows_module.declared())


def test_compare_json_of_two_ports_of_two_frameworks(capsys):
    """The fast tier's compare: the same row checks on two cheap lanes (JAX, numpy's autograd)."""
    pytest.importorskip("flax")
    pytest.importorskip("autograd")
    data = _compare_json(capsys, "--implementation", "jax_checkpoint", "hips_autograd")
    rows = {row["name"]: row for row in data["ports"]}
    assert {"jax_checkpoint", "hips_autograd"} <= set(rows)
    assert rows[implementations.CANONICAL]["reference"]
    assert rows["jax_checkpoint"]["lane"] != rows["hips_autograd"]["lane"]
    for name, row in rows.items():
        assert row["state"] == "available", (name, row["reason"])
        _check_row(name, row, extra=False)


def _check_row(name: str, row: dict, extra: bool) -> None:
    """A compare row agrees with the canonical, keeps only x checkpointed, and ran every
    policy its port expresses (an extra row, a framework's graph mode, is no port: none)."""
    if row["state"] != "available":
        assert row["reason"], name
        return
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
    # Bits against the exact result, for every port, the canonical one too.
    assert set(row["precision"]) == {"output", "exercise", "w1", "b1", "w2", "b2", "x"}
    assert all(b["ratio"] <= 1.0 for b in row["precision"].values()), name
    assert {"default", "pinned"} <= set(row["matmul_precision"]), name
    # Every policy the port expresses ran, agrees with the canonical under it, and saves
    # what its instrument family is expected to (an extra row is no port: none).
    policies = [] if extra else list(POLICY_NAMES)
    assert [c["policy"] for c in row["policies"]] == policies, name
    for cell in row["policies"]:
        if cell["expressible"]:
            assert not cell["error"], (name, cell)
            assert cell["agrees"], (name, cell)
            assert not cell["expected"], (name, cell)


def test_compare_reports_an_unavailable_port_without_crashing(monkeypatch):
    pytest.importorskip("flax")
    real_registered = implementations.registered()
    target = "ghost_framework_not_installed.port:Ghost"
    monkeypatch.setattr(
        implementations, "registered", lambda: {**real_registered, "ghost": (target, "test")}
    )
    monkeypatch.setattr(implementations, "OUTSIDE_LOADED", {})  # a load of it stays this test's
    result = compare.run(
        0, 4, 3, [implementations.CANONICAL, "ghost"], repeats=1, first_calls=False
    )
    ghost = result.ports[-1]
    # Read from the file system: no process is started for a framework that is not there.
    assert (ghost.name, ghost.state) == ("ghost", "unavailable")
    assert ghost.reason == "needs 'ghost_framework_not_installed', not installed"
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


def test_the_first_call_child_has_every_compilation_cache_off(monkeypatch, tmp_path):
    """A warm cache would make a compile look free, even one the user moved."""
    from conformance.comparison import first_call
    from conformance.running import framework_caches

    caches = framework_caches.declared().values()
    for cache in caches:
        monkeypatch.setenv(cache.setting, str(tmp_path / cache.folder))
        monkeypatch.setenv(cache.directory_variable, str(tmp_path / cache.folder))

    class Started(Exception):
        pass

    def run(target, args, env, timeout):
        scratch = Path(env[environment.SCRATCH_ENV])
        assert scratch.is_dir()
        assert not list(scratch.iterdir())
        raise Started(env)

    monkeypatch.setenv(environment.SCRATCH_ENV, str(tmp_path))  # this process's own
    monkeypatch.setattr(first_call.isolation, "run", run)
    with pytest.raises(Started) as started:
        first_call.first_call(implementations.CANONICAL, tmp_path / "inputs.npz", 0)
    env = started.value.args[0]
    assert {cache.setting: env[cache.setting] for cache in caches} == dict.fromkeys(
        (cache.setting for cache in caches), "off"
    )
    assert not [c.directory_variable for c in caches if c.directory_variable in env]
    # What a cache writes even when off goes to a directory of the child's alone, which the
    # parent removes, however the child ended (its own exit handler does not run on SIGKILL).
    assert env[environment.SCRATCH_ENV] != str(tmp_path)
    assert not Path(env[environment.SCRATCH_ENV]).exists()


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


def test_a_policy_cell_that_raised_fails_the_comparison():
    row = compare.PortComparison("p", "available")
    row.policies = [policy_matrix.PolicyCell("full", True, error="TypeError: boom")]
    assert compare.failed(compare.Comparison(0, 4, 3, implementations.CANONICAL, [row]))
    row.policies = [policy_matrix.PolicyCell("full", True, agrees=True)]
    assert not compare.failed(compare.Comparison(0, 4, 3, implementations.CANONICAL, [row]))


def test_a_composition_cell_that_shows_what_is_not_declared_fails_the_comparison():
    """compare read "passed" over torch_compile's ✗ under once (no expectation written down):
    a composition ✗ fails the comparison as a policy ✗ does."""
    row = compare.PortComparison("p", "available")
    row.compositions = [
        composition_matrix.CompositionCell("once", True, agrees=True, expected="no expectation")
    ]
    assert compare.failed(compare.Comparison(0, 4, 3, implementations.CANONICAL, [row]))
    row.compositions = [composition_matrix.CompositionCell("once", True, agrees=True)]
    assert not compare.failed(compare.Comparison(0, 4, 3, implementations.CANONICAL, [row]))


# --- precision: bits per port, and the framework's matmul setting ---------------------------


def test_compare_shows_a_tf32_port_within_the_bound_but_not_float32(capsys):
    # The case: at D = F = 256 a TF32 port is "within bound"; its bits say otherwise.
    pytest.importorskip("flax")
    from conformance import mutants

    canonical = implementations.load(implementations.CANONICAL)
    tf32 = mutants.load("tf32_matmul").port
    params = canonical.init_params(0, 256, 256)
    x, cotangent = measure.make_inputs(0, 256, 256)
    rows = [measure.compare_port(p, canonical, params, x, cotangent, 0) for p in (canonical, tf32)]
    exact, low = rows
    assert low.output.worst_ratio <= 1.0  # the rigorous bound admits it
    assert 10 < low.precision["output"].bits < 12 < 19 < exact.precision["output"].bits <= 25
    assert low.precision["output"].ratio > 1 > exact.precision["output"].ratio
    assert min(b.bits for b in exact.precision.values()) > 19
    assert compare.failed(compare.Comparison(0, 256, 256, "flax_linen", rows))
    assert not compare.failed(compare.Comparison(0, 256, 256, "flax_linen", rows[:1]))
    table = _render(render.precision_table(compare.Comparison(0, 256, 256, "flax_linen", rows)))
    assert "tf32_matmul" in table
    assert f"{low.precision['output'].bits:.1f}" in table


def _render(table) -> str:
    from rich.console import Console

    from conformance.tables.render import terminal

    console = Console(width=80, record=True, color_system=None)
    terminal.print_block(console, table)
    return console.export_text()


def test_the_precision_table_shows_default_and_pinned_settings_and_fits_80_columns():
    # What an accelerator reports: a default that is not float32, next to the pin.
    row = measure.PortComparison(
        "some_port_name",
        "available",
        precision={
            "output": measure.Bits(21.0, 0.01),
            "exercise": measure.Bits(11.2, 30.0),  # fails the tier: shown in red
            **{k: measure.Bits(22.5, 0.01) for k in ("w1", "b1", "w2")},
            "b2": measure.Bits(float("inf"), 0.0),
            "x": measure.Bits(float("inf"), 0.0),
        },
        matmul_precision={
            "default": "MLX_ENABLE_TF32=1 (allowed)",
            "pinned": "MLX_ENABLE_TF32=0",
            "device": "gpu",
        },
    )
    comparison = compare.Comparison(0, 8, 8, "flax_linen", [row])
    text = _render(render.precision_table(comparison))
    assert "21.0" in text
    assert "11.2" in text
    assert "exact" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    # The setting, default then pin, under the table, once for the ports that share it.
    (line,) = render.matmul_lines(comparison)
    assert line == "some_port_name: MLX_ENABLE_TF32=1 → MLX_ENABLE_TF32=0 (on gpu)"


def test_torch_reports_its_default_as_found_before_the_pin():
    # Forced where torch allows it on the CPU: TF32 allowed before the port pins.
    pytest.importorskip("torch")
    script = """
import json, torch
torch.set_float32_matmul_precision("high")
torch.backends.cuda.matmul.allow_tf32 = True
import implementations
port = implementations.load("pytorch")
before = port.matmul_precision()
port.pin_matmul_precision()
print(json.dumps([before, port.matmul_precision()]))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    before, after = json.loads(done.stdout.splitlines()[-1])
    assert before["default"] == before["current"] == "high (TF32 allowed for CUDA matmuls)"
    assert after["default"] == "high (TF32 allowed for CUDA matmuls)"  # as found
    assert after["pinned"] == after["current"] == "highest (TF32 off for CUDA matmuls)"
    assert after["device"] == "cpu"


def test_jax_reports_a_forced_setting_from_the_lowered_program():
    jax = pytest.importorskip("jax")
    port = implementations.load("jax_checkpoint")
    port.pin_matmul_precision()
    found = port.matmul_precision()
    assert (found["default"], found["pinned"], found["device"]) == ("DEFAULT", "HIGHEST", "cpu")
    # What a GPU's default would lower to: TF32 is "HIGH", one bf16 pass "DEFAULT".
    with jax.default_matmul_precision("tensorfloat32"):
        assert port.matmul_precision()["current"] == "HIGH"
    with jax.default_matmul_precision("bfloat16"):
        assert port.matmul_precision()["current"] == "DEFAULT"
    assert port.matmul_precision()["current"] == "HIGHEST"


def test_a_port_without_the_method_reports_not_reported():
    from implementations.contract import NOT_REPORTED, Implementation

    class Bare(Implementation):
        name, framework = "bare", "none"
        init_params = forward = vjp = backward_record = exercise_record = None
        nn_checkpoint_forward = to_numpy = from_numpy = None

    assert Bare().matmul_precision() == {"default": NOT_REPORTED, "pinned": NOT_REPORTED}
