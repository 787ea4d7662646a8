"""Facts `compare` puts on screen agree with the rest of the report (issue 76, items 5, 7)."""

from __future__ import annotations

from conformance import comparison as compare
from conformance.checking import composition
from conformance.comparison import render
from conformance.comparison.model import Residuals


def _residuals(recomputed, backward_matmuls, rerun_matmuls=None) -> Residuals:
    return Residuals(0, 0, [], recomputed, 1, "test", "suite", backward_matmuls, rerun_matmuls)


def _recomputed_cell(off: Residuals, on: Residuals):
    row = compare.PortComparison("tfjs", "available", residuals={"off": off, "on": on})
    table = render.summary_table(compare.Comparison(0, 3, 4, "flax_linen", [row]))
    column = [c.name for c in table.columns].index("recomp.\n(on)")
    return table.rows[0].cells[column]


def test_tfjs_reruns_the_matmul_its_composition_row_counts():
    # tfjs's records as its port reports them (D = 3, F = 4): by name it reruns Relu and Add
    # alone, since BatchMatMul runs for the gradient too; by count its backward runs one
    # BatchMatMul more with the checkpoint on (x @ W1 again), which (k) reads as one rerun.
    off = _residuals({}, 4)
    on = _residuals({"Relu": 1, "Add": 1}, 5)
    assert composition.rerun_matmuls(on, off) == 1  # the composition matrix's "rerun mm"
    cell = _recomputed_cell(off, on)
    assert cell.text == "3 ops\n1 matmul"  # was "2 ops\n0 matmul"


def test_a_stack_that_names_its_rerun_matmuls_keeps_its_count():
    off = _residuals({}, None)
    on = _residuals({"dot_general": 1, "add": 2, "max": 1}, None)
    assert _recomputed_cell(off, on).text == "4 ops\n1 matmul"
    counted = _residuals({"dot_general": 2}, 6, rerun_matmuls=2)
    assert _recomputed_cell(_residuals({}, 4), counted).text == "2 ops\n2 matmul"
