"""`python -m conformance plan` (`conformance/commands/plan.py`, `conformance/benchmark/plan.py`),
each stack's plan declarations, and `bench --schedules`' measured points against the true
optimum (`conformance/benchmark/against_optimum.py`) and in its picture."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conformance import cli
from conformance.benchmark import against_optimum
from conformance.benchmark import plan as planning
from implementations.optimum import optimal_evaluations, optimal_placement
from implementations.revolve import revolve_forward_steps
from implementations.schedules import show
from tests.support import plan_kit
from tests.support.helpers import ROOT

#: The hand-computed optimum at L = 64 within 16 units (1 MiB at B = 256, F = 64: 64 KiB a unit).
SHRINKING = (
    "[0 1 2 3 4 5 6 7] [8 9 10 11 12 13 14] [15 16 17 18 19 20 21] [22 23 24 25 26 27] "
    "[28 29 30 31 32 33] [34 35 36 37 38] [39 40 41 42 43] [44 45 46 47] [48 49 50 51] "
    "[52 53 54] [55 56 57] [58 59] [60 61] [62] 63"
)
PLANNED = ("jax", "autograd", "deepspeed", "mindspore", "mlx", "paddle", "tensorflow", "torch")


def _plan(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["plan", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_done_command_prints_the_hand_computed_placement_for_every_framework(capsys):
    code, out, _ = _plan(capsys, "--depth", "64", "--memory", "1MiB", "--batch", "256",
                         "--features", "64")  # fmt: skip
    assert code == 0
    _says_the_hand_computed_optimum(out)
    # Revolve within 16 units: 14 snapshots, the state and one tape (c + 2 units)
    revolve = revolve_forward_steps(64, 14) + 64
    assert f"within the same budget: {revolve} block evaluations (binomial(14))" in out
    for framework in PLANNED:
        assert f"\n{framework}: optimal(16), predicted peak 16 units, 127 block evaluations" in out
    nested_lists = "[[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14],"
    assert out.count(f"run({nested_lists}") == 6  # and autograd's items=, mindspore's placed(
    assert "checkpoint(run, item, x, use_reentrant=False)" in out  # torch's own spelling
    assert "not planned (their bench modules declare no PLACE_CODE):" in out


def _says_the_hand_computed_optimum(out: str) -> None:
    assert "within 16 units" in out
    assert f"optimal placement ([...] a region, a number a block run plain): {SHRINKING}\n" in out
    assert "predicted: peak 16 units (1 MiB), 127 block evaluations, 14 regions" in out


def test_a_plan_on_revolve_s_model_passed_off_as_the_optimum_is_caught(capsys, monkeypatch):
    """The mutant: the plan's optimum with the tape cost ignored (one block taped at a time)."""

    def revolve_as_the_optimum(L, peak, a=1.0):
        return optimal_placement(L, peak, a, one_tape=True)

    monkeypatch.setattr(planning, "optimal_placement", revolve_as_the_optimum)
    _, out, _ = _plan(capsys, "--depth", "64", "--memory", "1MiB")
    with pytest.raises(AssertionError):
        _says_the_hand_computed_optimum(out)


@pytest.mark.parametrize("memory", ["16units", "16 units", "1048576", "1024KiB", "1MiB"])
def test_the_memory_is_read_in_bytes_kib_mib_or_units(capsys, memory):
    _, out, _ = _plan(capsys, "--depth", "64", "--memory", memory, "--framework", "torch")
    assert "within 16 units" in out
    assert f"optimal placement ([...] a region, a number a block run plain): {SHRINKING}\n" in out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--depth", "0", "--memory", "1MiB"], "--depth must be a positive integer, got '0'"),
        (["--depth", "64", "--memory", "lots"], "--memory must be a positive size in bytes"),
        (["--depth", "64", "--memory=-1MiB"], "--memory must be a positive size"),
        (
            ["--depth", "64", "--memory", "2units"],
            "--memory 2 units is below the least any "
            "schedule keeps at L = 64: 3 units (196608 bytes at B = 256, F = 64",
        ),
        (
            ["--depth", "64", "--memory", "64KiB", "--framework", "jax"],
            "--memory 1 units is below the least any schedule keeps at L = 64: 3.25 units",
        ),
        (["--depth", "8", "--memory", "1MiB", "--framework", "nosuch"], "--framework"),
        (
            ["--depth", "8", "--memory", "1MiB", "--framework", "mlx"],
            "--framework mlx declares no INTERNALS_UNITS",
        ),
        (["--depth", "8", "--memory", "1MiB", "--batch", "0"], "--batch must be"),
        (["--depth", "8"], "--memory"),
    ],
)
def test_a_bad_argument_is_one_line_naming_it(capsys, argv, says):
    with pytest.raises(SystemExit) as stopped:
        _plan(capsys, *argv)
    _, err = capsys.readouterr()
    assert stopped.value.code == 2
    assert err.count("\n") == 1, err
    assert err.startswith("python -m conformance plan: error: ")
    assert says in err


def test_with_a_framework_the_model_takes_its_internals(capsys):
    _, out, _ = _plan(capsys, "--depth", "64", "--memory", "1MiB", "--framework", "jax")
    assert "a = 1.25 unit of internals per taped block" in out
    assert "\njax: the optimum at a = 1.25, predicted peak 16 units, 138 block evaluations" in out
    assert "\ntorch:" not in out


def test_a_framework_without_nested_regions_gets_the_nearest_schedule_it_expresses():
    flat = planning.Declared("flat", "run($placement)", 1.0, frozenset({"optimal", "nested"}))
    choice = planning.choose("flat", 64, 23, 1.0, flat)
    # the docs' table: segments(8) keeps 23 units for 120 evaluations, binomial(21) 169
    assert (choice.label, choice.peak_units, choice.evaluations) == ("segments(8)", 23, 120)
    assert choice.code == f"run({planning.as_lists(choice.items)})"
    assert planning.choose("flat", 64, 16, 1.0, flat).label == "binomial(14)"


def test_every_place_code_is_python_with_the_placement_in_it():
    for framework in planning.planned_frameworks():
        code = planning.declared(framework).place_code
        compile(planning.Template(code).substitute(placement="[[0, 1], [2], 3]"), framework, "exec")
        assert "$placement" in code, framework
    assert sorted(planning.planned_frameworks()) == sorted(PLANNED)


def test_torch_s_place_code_places_the_optimum_and_keeps_the_gradients():
    torch = pytest.importorskip("torch")
    plan = planning.make_plan(8, 4, 4, 8, ["torch"], 1.0)
    torch.manual_seed(0)
    blocks = [
        torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8))
        for _ in range(8)
    ]
    x = torch.randn(4, 8)
    namespace = {"blocks": blocks, "x": x}
    exec(plan.choices[0].code, namespace)  # the printed code, run as printed
    placed = torch.autograd.grad(namespace["y"].sum(), [p for b in blocks for p in b.parameters()])
    plain = x
    for block in blocks:
        plain = block(plain)
    reference = torch.autograd.grad(plain.sum(), [p for b in blocks for p in b.parameters()])
    assert show(plan.items) == "[[0 1] [2] 3] [[[4] 5] 6] 7"  # regions, nested: not a plain run
    for got, want in zip(placed, reference, strict=True):
        assert torch.equal(got, want)


def test_measure_runs_torch_and_shows_measured_against_predicted(capsys):
    pytest.importorskip("torch")
    code, out, _ = _plan(capsys, "--depth", "16", "--memory", "6units", "--framework", "torch",
                         "--measure")  # fmt: skip
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("torch · optimal(6): "))
    found = re.search(
        r"(?P<peak>[\d.]+) units measured, (?P<model>[\d.]+) predicted .*; "
        r"(?P<runs>[\d.]+) evaluations measured, (?P<evaluations>\d+) predicted",
        line,
    )
    assert found, line
    evaluations = optimal_evaluations(16, 6)
    assert (float(found["model"]), int(found["evaluations"])) == (6, evaluations)
    # the bench's acceptance: up to 1.25 x the model + 4 units (output, cotangent, working
    # values); a rerun may skip its region's last a @ W2 (half a block)
    assert 6 * 0.9 <= float(found["peak"]) <= 6 * 1.25 + 4
    regions = sum(1 for _ in optimal_regions(16, 6))
    assert evaluations - regions / 2 <= float(found["runs"]) <= evaluations
    assert "within the bench's acceptance" in line


def test_measure_runs_mlx_its_evaluations_measured_its_peak_not_observable_with_why():
    """MLX declares no a (`--framework mlx` is refused): the default plan's a = 1 predicts it,
    as `--measure` without `--framework` runs it."""
    pytest.importorskip("mlx.core")
    from implementations.stacks.mlx import instrument

    line, runs, predicted = plan_kit.measured_line("mlx", 16, 6)
    assert line.startswith("mlx · optimal(6): "), line
    assert f"peak: not observable: {instrument.PEAK_NOT_SPLIT}" in line
    evaluations = optimal_evaluations(16, 6)
    regions = sum(1 for _ in optimal_regions(16, 6))
    assert predicted == evaluations
    assert evaluations - regions / 2 <= runs <= evaluations
    assert "within the bench's acceptance where observed" in line


def test_measure_runs_by_default_every_planned_framework_on_the_core():
    from conformance.commands import plan as plan_command

    measured = plan_command.measured_by_default()
    assert {"mlx", "mindspore"} <= set(measured)  # a peak not observable leaves none out
    assert set(measured) == {
        n for n in planning.planned_frameworks() if planning.declared(n).on_the_core
    }


def optimal_regions(L, m):
    from implementations.schedules import regions

    return regions(optimal_placement(L, m))


# -- the measured points against the optimum --------------------------------------------------


def _recorded() -> dict:
    return json.loads((ROOT / "docs" / "bench-schedules.json").read_text())


def test_no_recorded_point_lies_below_the_optimum():
    data = _recorded()
    found = against_optimum.against(data)
    assert len(found) >= 40  # every observed row at L = 64
    assert {r.depth for r in found} == {64}
    assert not against_optimum.below(data), [
        (r.framework, r.schedule, round(r.ratio, 3)) for r in against_optimum.below(data)
    ]


def test_a_point_below_the_optimum_is_caught():
    """The mutant: an instrument that halves torch's peaks (a point the optimum cannot reach)."""
    data = _recorded()
    for row in data["results"]:
        if row["framework"] == "torch" and row["peak_bytes"] is not None:
            row["peak_bytes"] //= 2
    caught = {r.schedule for r in against_optimum.below(data) if r.framework == "torch"}
    assert {"none", "segments(8)"} <= caught


def test_a_rerun_that_skips_its_last_matmul_is_still_its_block_s_evaluation():
    row = {"forward_matmuls": [128, 105], "least_matmuls": 233, "model_matmuls": 240}
    assert against_optimum.evaluations_of(row) == 120
    row["forward_matmuls"] = [128, 100]  # past the acceptance: what ran
    assert against_optimum.evaluations_of(row) == 114


def test_the_picture_draws_the_optimum_under_revolve_per_framework():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from conformance.benchmark.schedule_plot import figure

    data = _recorded()
    drawn = figure(data)
    try:
        # the frameworks with a peak observed (MLX's whole peak is not the model's quantity)
        seen = [r for r in data["results"] if r["peak_bytes"] is not None]
        frameworks = list(dict.fromkeys(r["framework"] for r in seen))
        assert "mlx" not in frameworks
        top = drawn.axes[: len(frameworks)]
        unit = data["settings"]["batch"] * data["settings"]["features"] * 4
        for axis, framework in zip(top, frameworks, strict=True):
            lines = {line.get_label(): line for line in axis.get_lines()}
            a = against_optimum.internals_of(framework)
            optimum = lines[f"true optimum (several blocks taped at once, a = {a:g})"]
            revolve = lines["Revolve's frontier (model: one block taped at a time)"]
            xs, ys = optimum.get_xdata(), np.asarray(optimum.get_ydata()) * 2**20 / unit
            assert min(ys) == 2 + a  # one checkpoint and one taped block
            assert (xs[-1], ys[-1]) == (64, 64 * (1 + a))  # every block taped
            if a == 1:  # the hand point: 127 evaluations within 16 units, Revolve's 176
                assert min(x for x, y in zip(xs, ys, strict=True) if y <= 16) == 127
                revolved = zip(revolve.get_xdata(), revolve.get_ydata(), strict=True)
                assert min(x for x, y in revolved if y * 2**20 / unit <= 16) == 176
            assert len(revolve.get_xdata()) == 63
    finally:
        plt.close(drawn)
