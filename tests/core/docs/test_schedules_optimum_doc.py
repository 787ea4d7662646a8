"""docs/SCHEDULES.md's section on the optimum and `plan`: every number in it is the code's."""

from __future__ import annotations

import ast
import json

from conformance.benchmark import against_optimum
from conformance.benchmark import plan as planning
from conformance.commands import plan as plan_command
from implementations.optimum import least_peak, optimal_frontier, optimal_placement
from implementations.schedules import Region
from tests.support.helpers import ROOT

DOC = ROOT / "docs" / "SCHEDULES.md"


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## The optimum: several blocks taped at once")
    return " ".join(text[start : text.index("## At L = 64", start)].split())


def _least_within(evaluations: int) -> tuple[float, int]:
    return min(
        (p.peak, p.evaluations) for p in optimal_frontier(64) if p.evaluations <= evaluations
    )


def test_the_hand_points_are_the_optimum_s():
    text = _section()
    for budget in (128, 201):
        peak, evaluations = _least_within(budget)
        revolve, c = planning.revolve_within(64, peak, 1.0)
        assert f"**{peak:g} units**, for {evaluations} evaluations" in text
        assert f"within {budget} evaluations" in text
        assert f"Revolve needs {revolve}" in text
        assert f"(`binomial({c})`)" in text
    items = optimal_placement(64, 16)
    spans = [item.blocks for item in items if isinstance(item, Region)]
    shown = " ".join(f"[{b.start}..{b.stop - 1}]" for b in spans[:3])
    assert f"`{shown} ... [{spans[-1].start}] {items[-1]}`" in text
    sizes = [len(b) for b in spans]
    assert (
        f"{len(sizes)} regions of {', '.join(map(str, sizes[:5]))}, ..., {sizes[-1]} blocks" in text
    )
    least = optimal_frontier(64)[0]
    assert f"the least peak is {least.peak:g} units (2 + a" in text
    assert f"for {least.evaluations} evaluations" in text


def test_the_enumeration_s_sizes_are_the_tests():
    from tests.core.implementations import test_optimum

    tree = ast.parse((ROOT / "tests/core/implementations/test_optimum.py").read_text())
    ranges = [
        ast.literal_eval(node.args[1]) if isinstance(node.args[1], ast.List) else node.args[1]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize"
        and node.args and ast.literal_eval(node.args[0]) == "L"
    ]  # fmt: skip
    assert [7, 8] in ranges
    assert any(isinstance(r, ast.Call) and ast.unparse(r) == "range(1, 7)" for r in ranges)
    text = _section()
    seven = len(test_optimum._sequences(7))
    assert f"every nested placement of up to 6 blocks (7 and 8 in the full tier: {seven} " in text


def test_the_plan_s_numbers_are_the_code_s():
    text = _section()
    unit = planning.unit_bytes(256, 64)
    units = planning.budget_units(1, "MiB", 256, 64)
    assert f"{unit} bytes at B = 256, F = 64, so 1 MiB is {units:g} units" in text
    spelled = {"torch": "torch", "tensorflow": "TensorFlow", "autograd": "autograd",
               "paddle": "Paddle", "deepspeed": "DeepSpeed", "jax": "JAX"}  # fmt: skip
    said = ", ".join(f"{spelled[n]} {planning.declared(n).internals_units:g}" for n in spelled)
    assert f"held to its instrument (`none`'s peak grows 1 + a a block): {said}." in text
    assert planning.declared("mlx").internals_units is None
    measured = ", ".join(plan_command.measured_by_default())
    assert f"every planned one on the measurement core: {measured}) and prints" in text
    assert f"(`--memory 2units` at L = 64: {least_peak(64):g} units)" in text


def test_the_ratio_against_the_optimum_is_the_recorded_run_s():
    text = _section()
    data = json.loads((ROOT / "docs" / "bench-schedules.json").read_text())
    found = against_optimum.against(data)
    least = min(r.ratio for r in found)
    lowest = [r for r in found if round(r.ratio, 3) == round(least, 3)]
    names = {"torch": "torch", "tensorflow": "TensorFlow", "paddle": "Paddle",
             "deepspeed": "DeepSpeed"}  # fmt: skip
    assert {r.framework for r in lowest} == set(names)
    assert {r.schedule for r in lowest} == {"none"}
    (peak,) = {r.peak_units for r in lowest}
    (optimum,) = {r.optimum_units for r in lowest}
    assert f"fails on a ratio below {against_optimum.LEAST_RATIO}" in text
    assert (
        f"the least ratio is {least:.3f}: `none` in torch, TensorFlow, Paddle and DeepSpeed "
        f"keeps {peak:g} units where the optimum keeps {optimum:g}"
    ) in text
    mlx = next(r for r in data["results"] if r["framework"] == "mlx" and r["schedule"] == "none"
               and r["depth"] == 64)  # fmt: skip
    # MLX's whole peak is not the model's quantity: not observable, the whole in its reason
    assert mlx["peak_bytes"] is None
    whole = int(mlx["peak_method"].split(" read ")[1].split(" bytes")[0])
    per_block = whole / planning.unit_bytes(256, 64) / 64
    assert f"`none` keeps {per_block:.2f} units a block at L = 64" in text
